"""The engine core shared by every game: cards, the seeded generator, fairness, the hash
chain, rule violations and the game protocol. Pure: no I/O, no clock, no global random."""
