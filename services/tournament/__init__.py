"""The tournament service: tournaments as event logs decided by :mod:`engine.tournament`,
their tables played as matches of the game service, their results read from the games'
events (docs/architecture.md "Tournaments")."""
