"""Table talk's and reports' stable error reasons, as the game service has
:class:`services.platform.errors.Reason`.

Each travels in ``ErrorInfo.reason`` as its ``dast.v1.ErrorReason`` value's name
(``chat_off`` → ``ERROR_REASON_CHAT_OFF``, protos/dast/v1/errors.proto). A reason never
changes once shipped; shared ones (``table_not_found``, ``game_not_found``) keep the values
the lobby and the game service answer with.
"""

from __future__ import annotations

from enum import StrEnum

from services.platform.errors import Reason


class ChatReason(StrEnum):
    """Why table talk refused a call."""

    NOT_AT_TABLE = "not_at_table"
    """The caller neither sits at the table nor may watch it (no spectators allowed)."""
    CHAT_OFF = "chat_off"
    """The host turned the table's talk off."""
    CHAT_PHRASES_ONLY = "chat_phrases_only"
    """The table allows quick phrases only, and the call sent text."""
    CHAT_TOO_LONG = "chat_too_long"
    """The text has more characters than the limit, once cleaned."""
    CHAT_TEXT_INVALID = "chat_text_invalid"
    """Nothing visible is left of the text (or neither text nor a phrase was sent)."""
    UNKNOWN_PHRASE = "unknown_phrase"
    """No quick phrase has that id."""
    CHAT_RATE_LIMITED = "chat_rate_limited"
    """The player sent as many messages as the window allows."""
    CANNOT_MUTE_SELF = "cannot_mute_self"
    """A player muting themselves."""
    TABLE_NOT_FOUND = "table_not_found"
    """No table has that id, or is playing that match (the lobby's reason)."""
    CHAT_UNAVAILABLE = "chat_unavailable"
    """Where the talk is kept (NATS) did not answer just now: retry."""


class ReportReason(StrEnum):
    """Why a report (or an operator's reading of them) was refused."""

    NOT_IN_GAME = "not_in_game"
    """The caller, or the player reported, did not sit in the match."""
    CANNOT_REPORT_SELF = "cannot_report_self"
    """A player reporting themselves."""
    REPORT_NOT_FOUND = "report_not_found"
    """No kept report has that id."""
    GAME_NOT_FOUND = Reason.GAME_NOT_FOUND.value
    """No table holds that match."""
