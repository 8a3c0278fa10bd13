"""The stats service: players' figures, ratings, leaderboards and histories, projected from
the games' events on the bus into tables of its own (docs/architecture.md "Stats service")."""
