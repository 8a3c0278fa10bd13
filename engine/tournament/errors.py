"""The stable codes of the tournament engine's refusals.

Every command given to :func:`engine.tournament.decide` either yields events or raises a
:class:`~engine.core.errors.RuleViolation` (a well-formed command the tournament does not
allow now) or an :class:`~engine.core.errors.InvalidCommand` (a malformed one) whose
``code`` is one of these. Codes never change once shipped.
"""

from __future__ import annotations

from enum import StrEnum


class TournamentCode(StrEnum):
    """Why the tournament engine refused a command or an option."""

    INVALID_OPTIONS = "tournament_invalid_options"
    INVALID_ID = "tournament_invalid_id"
    INVALID_SEED = "tournament_invalid_seed"
    REGISTRATION_CLOSED = "tournament_registration_closed"
    ALREADY_REGISTERED = "tournament_already_registered"
    PLAYER_ALREADY_ENTERED = "tournament_player_already_entered"
    WRONG_TEAM_SIZE = "tournament_wrong_team_size"
    FULL = "tournament_full"
    UNKNOWN_ENTRANT = "tournament_unknown_entrant"
    UNKNOWN_PLAYER = "tournament_unknown_player"
    ALREADY_WITHDRAWN = "tournament_already_withdrawn"
    NOT_STARTED = "tournament_not_started"
    ALREADY_STARTED = "tournament_already_started"
    TOO_FEW_ENTRANTS = "tournament_too_few_entrants"
    FINISHED = "tournament_finished"
    WRONG_ROUND = "tournament_wrong_round"
    UNKNOWN_TABLE = "tournament_unknown_table"
    RESULT_ALREADY_RECORDED = "tournament_result_already_recorded"
    INVALID_RESULT = "tournament_invalid_result"
    NOT_TIMED_OUT = "tournament_not_timed_out"
