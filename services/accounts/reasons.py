"""The accounts service's stable error reasons, as the game service has
:class:`services.platform.errors.Reason`.

Each travels in ``ErrorInfo.reason`` as its ``dast.v1.ErrorReason`` value's name
(``refresh_token_reused`` → ``ERROR_REASON_REFRESH_TOKEN_REUSED``, protos/dast/v1/errors.proto).
A reason never changes once shipped.
"""

from __future__ import annotations

from enum import StrEnum


class AccountsReason(StrEnum):
    """Why the accounts service refused a call (besides the platform's reasons)."""

    DEVICE_SECRET_INVALID = "device_secret_invalid"
    """The device signed in before and the call lacks its secret (or carries another)."""
    REFRESH_TOKEN_INVALID = "refresh_token_invalid"
    """The refresh token is unknown, expired, or of a session that ended."""
    REFRESH_TOKEN_REUSED = "refresh_token_reused"
    """The refresh token was spent already: its whole session is ended now."""
    GUEST_ALREADY_MOVED = "guest_already_moved"
    """The lobby guest the call's token names moved to the accounts service already, from
    another device id."""
    NO_SESSION = "no_session"
    """The access token names no session (a token of the lobby's guest sign-in)."""
    IDENTITY_LINKED_ELSEWHERE = "identity_linked_elsewhere"
    """The identity is linked to another player already (an identity belongs to one)."""
    PROVIDER_ALREADY_LINKED = "provider_already_linked"
    """The player has another identity of that provider linked (one per provider)."""
    IDENTITY_NOT_LINKED = "identity_not_linked"
    """The player has no such identity linked."""
    LAST_WAY_IN = "last_way_in"
    """Unlinking would leave the player no way in: no other identity and no device."""
    ACCOUNT_NOT_FOUND = "account_not_found"
    """No player of that id has signed in to this service (so it has no profile)."""
    INVALID_AVATAR_ID = "invalid_avatar_id"
    """The avatar id is not of the documented characters and length."""
    INVALID_LOCALE = "invalid_locale"
    """The locale is not a BCP 47 tag of the documented form."""


class ModerationReason(StrEnum):
    """Why the moderation service refused an operator's call (besides the platform's)."""

    UNKNOWN_PLAYER = "unknown_player"
    """The accounts service knows no player with this id."""
