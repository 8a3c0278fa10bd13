"""The Hokm search core: what the ``expert`` bot searches with.

- :mod:`~engine.hokm.search.core`: :class:`~engine.hokm.search.core.FastRound`, one round's
  trick play as mutable ints and card masks (hands, the trick, the piles of the two-player
  game), with legal-move masks, play, trick resolution and round scoring through the
  kernels of :mod:`engine.hokm._core`;
- :mod:`~engine.hokm.search.playout`: the greedy bot's choices over masks, and whole-round
  playouts with it;
- :mod:`~engine.hokm.search.worlds`: what a seat knows from its view, deals sampled
  consistently with it, and how likely each sample makes the play so far.

Nothing here reads a clock or a global random generator: callers pass a seeded
:class:`random.Random` (made from the bot's :class:`~engine.core.rng.DeterministicRandom`).
"""
