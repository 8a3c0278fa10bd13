"""What the handler of a bidirectional stream knows of its caller beyond the identity.

A unary call or a server stream is authenticated once and lasts as long as its token is
worth; a bidirectional stream (``GameService.Play``) carries commands for as long as a match
lasts, longer than an access token lives. The server's interceptor therefore hands such a
handler a :class:`StreamCaller` (:func:`current_stream_caller`): when the opening token
expires (:attr:`StreamCaller.expires_at`), whether a fresh token of the same caller renews
the stream (:meth:`StreamCaller.renew`, checked as every call's token is: signature,
expiry, revoked session, ban), and the per-caller limits every command it carries must pass
(:meth:`StreamCaller.admit`, the same buckets as the unary method's).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

from services.platform.auth import AuthError, Identity
from services.platform.errors import Reason

TokenCheck = Callable[[str], tuple[Identity, int]]
"""A bearer token's identity and expiry (epoch seconds); raises AuthError when refused."""
Admission = Callable[[Identity, str], None]
"""Admits one call of a caller to a method; raises ServiceError over the caller's limits."""


class StreamCaller:
    """The caller of one bidirectional stream: its identity, its token's expiry, renewal."""

    __slots__ = ("_admit", "_check", "expires_at", "identity")

    def __init__(self, identity: Identity, expires_at: float, check: TokenCheck,
                 admit: Admission) -> None:
        self.identity = identity
        self.expires_at = expires_at
        """When the newest token of the stream expires (epoch seconds)."""
        self._check = check
        self._admit = admit

    def renew(self, token: str) -> float:
        """Take a fresh ``token`` of the same caller (player, role and session); return its
        expiry, now the stream's.

        :raises AuthError: for a token refused as a call's would be, or one of anyone else
            (reason ``token_invalid``).
        """
        identity, expires = self._check(token)
        same = (identity.player_id, identity.role, identity.session_id) == (
            self.identity.player_id, self.identity.role, self.identity.session_id)
        if not same:
            raise AuthError("a stream is renewed only by a token of the caller who opened it",
                            Reason.TOKEN_INVALID)
        self.expires_at = max(self.expires_at, float(expires))
        return self.expires_at

    def admit(self, method: str) -> None:
        """Count one call of ``method`` against the caller's limits (a command carried by
        the stream costs what the unary call would).

        :raises ServiceError: RESOURCE_EXHAUSTED over the caller's limits.
        """
        self._admit(self.identity, method)


_CURRENT: contextvars.ContextVar[StreamCaller | None] = contextvars.ContextVar(
    "dast_stream_caller", default=None
)


def current_stream_caller() -> StreamCaller:
    """The caller of the bidirectional stream being served.

    :raises AuthError: outside a bidirectional stream the server's interceptor admitted (a
        wiring bug).
    """
    caller = _CURRENT.get()
    if caller is None:
        raise AuthError("no authenticated stream caller")
    return caller


def serving(caller: StreamCaller) -> None:
    """Make ``caller`` the :func:`current_stream_caller` of the running stream (its handler
    runs in a context of its own, so nothing needs resetting)."""
    _CURRENT.set(caller)
