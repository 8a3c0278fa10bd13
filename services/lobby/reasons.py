"""The lobby's stable error reasons, as the game service has
:class:`services.platform.errors.Reason`.

Each travels in ``ErrorInfo.reason`` as its ``dast.v1.ErrorReason`` value's name
(``table_full`` → ``ERROR_REASON_TABLE_FULL``, protos/dast/v1/errors.proto). A reason never
changes once shipped; the lobby answers shared ones (``invalid_request``, ``not_seated``,
``unknown_game_type``) with the same values as the other services.
"""

from __future__ import annotations

from enum import StrEnum

from services.platform.errors import Reason


class LobbyReason(StrEnum):
    """Why the lobby refused a call."""

    TABLE_NOT_FOUND = "table_not_found"
    TABLE_NOT_WAITING = "table_not_waiting"
    TABLE_FULL = "table_full"
    SEAT_TAKEN = "seat_taken"
    NOT_SEATED = Reason.NOT_SEATED.value
    NOT_HOST = "not_host"
    INVITE_REQUIRED = "invite_required"
    GAME_NOT_OVER = Reason.GAME_NOT_OVER.value
    CONCURRENT_CHANGE = "concurrent_change"
    """The table changed between loading and saving it: reload and retry."""
    INVALID_SETTINGS = "invalid_settings"
    """Table settings outside what the app offers or the game accepts."""
    INVALID_REQUEST = Reason.INVALID_REQUEST.value
    UNKNOWN_GAME_TYPE = Reason.UNKNOWN_GAME_TYPE.value
    GAME_SERVICE_UNAVAILABLE = "game_service_unavailable"
    """The game service did not answer while the match was being created: retry."""
    DEVICE_SIGN_IN_RETIRED = "device_sign_in_retired"
    """The lobby's ``SignInGuest`` (the device id as the whole credential) is off on this
    server: sign in through ``AccountsService``."""
