"""Who is signed in to the console: operators, by their admin token.

An operator signs in with an admin token (``dast token OPERATOR --role admin``, or the one
an operator's tooling mints with the deployment's operator key). The console verifies it
with the deployment's public keys exactly as every service does
(:class:`~services.platform.auth.TokenCheck`), refuses player and service tokens, and keeps
it in memory behind an opaque session id (the cookie carries only that id), until the token
expires or the operator signs out. The console then calls the services with that token.
Each session has its own CSRF token, which every form posts back.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from services.platform.auth import AuthError, Identity, Role, TokenCheck, TokenKeyRing

SESSION_COOKIE: Final = "dast_console"
SIGN_IN_COOKIE: Final = "dast_console_sign_in"
"""The pre-session cookie whose value the sign-in form posts back (no forged sign-ins)."""
MAX_SESSIONS: Final = 10_000


class SignInRefused(Exception):
    """A token that may not sign in to the console; the message is for the operator."""


@dataclass(frozen=True)
class OperatorSession:
    """One signed-in operator."""

    session_id: str
    token: str
    identity: Identity
    expires_at: float
    """When the token expires (epoch seconds): the session ends then."""
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def csrf_matches(self, sent: object) -> bool:
        """Whether a form posted this session's CSRF token."""
        return isinstance(sent, str) and hmac.compare_digest(sent, self.csrf)


class Sessions:
    """The console's sessions, in this process's memory."""

    def __init__(self, ring: TokenKeyRing, *, now: Callable[[], float] = time.time) -> None:
        self._check = TokenCheck(ring)
        self._now = now
        self._sessions: dict[str, OperatorSession] = {}

    def sign_in(self, token: str) -> OperatorSession:
        """A new session for an operator's admin ``token``.

        :raises SignInRefused: for a token that is not a valid, unexpired admin token.
        """
        token = token.strip()
        if token.lower().startswith("bearer "):
            token = token[len("bearer "):].strip()
        if not token:
            raise SignInRefused("paste an operator's admin token to sign in")
        try:
            identity, expires = self._check.check(token)
        except AuthError as error:
            raise SignInRefused(error.message) from error
        if identity.role is not Role.ADMIN:
            raise SignInRefused(f"this is a {identity.role} token: only an operator's admin "
                                "token signs in to the console")
        self._forget_expired()
        if len(self._sessions) >= MAX_SESSIONS:
            raise SignInRefused("too many console sessions are open; try again later")
        session = OperatorSession(secrets.token_urlsafe(32), token, identity, float(expires))
        self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str | None) -> OperatorSession | None:
        """The live session of a cookie's id (None: none, or expired)."""
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.expires_at <= self._now():
            self._sessions.pop(session_id, None)
            return None
        return session

    def any_token(self) -> str | None:
        """The token of the latest live session (what the background sampling reads
        with), if any."""
        now = self._now()
        for session in reversed(list(self._sessions.values())):
            if session.expires_at > now:
                return session.token
        return None

    def sign_out(self, session_id: str | None) -> None:
        """End a session (nothing when there is none)."""
        if session_id:
            self._sessions.pop(session_id, None)

    def seconds_left(self, session: OperatorSession) -> int:
        """How long the session's cookie may live."""
        return max(0, int(session.expires_at - self._now()))

    def _forget_expired(self) -> None:
        now = self._now()
        for session_id in [key for key, value in self._sessions.items()
                           if value.expires_at <= now]:
            del self._sessions[session_id]
