"""Why the tournament service refuses a call, outside the tournament engine's own rules
(:class:`engine.tournament.errors.TournamentCode`): stable codes sent in ``ErrorInfo``."""

from __future__ import annotations

from enum import StrEnum


class TournamentServiceReason(StrEnum):
    TOURNAMENT_NOT_FOUND = "tournament_not_found"
    """No tournament has that id."""
    CONCURRENT_STEP = "concurrent_step"
    """The tournament's log kept moving under the call (other replicas' steps): retry."""
    NOT_REGISTERED = "not_registered"
    """The caller is in no entrant of the tournament."""
    TOO_MANY_OPEN_TOURNAMENTS = "too_many_open_tournaments"
    """The caller hosts as many open (registering or running) tournaments as the server
    allows one player."""
    TOURNAMENT_CREATION_RESTRICTED = "tournament_creation_restricted"
    """The server lets only signed-in players (not guests), or only operators, create
    tournaments."""
