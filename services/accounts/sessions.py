"""Sessions: the tokens the accounts service issues, and the one place that mints them.

A sign-in opens a session; the session's tokens are a pair:

- an access token: a bearer JWT naming the player and the session (``sid``), living
  :attr:`TokenPolicy.access_ms` (``DAST_ACCESS_TOKEN_MINUTES``, or
  ``DAST_ACCESS_TOKEN_SECONDS`` when set). Every service checks
  it with :mod:`services.platform.auth`; :meth:`Sessions.mint_access` is the only code of
  this service that makes one, so changing how access tokens are signed changes one place;
- a refresh token: 32 random bytes in URL-safe base64, opaque to everyone, stored only as
  its SHA-256 digest, living :attr:`TokenPolicy.refresh_days` (``DAST_REFRESH_TOKEN_DAYS``).
  :meth:`Sessions.refresh` spends it for a new pair; a spent token presented again ends the
  session (:meth:`services.accounts.store.AccountsStore.rotate`).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from dast.v1 import accounts_pb2
from services.accounts.store import AccountsStore, NewSession, RefreshRefused, digest
from services.platform.auth import Role, TokenKeyRing, TokenSigner, mint_token
from services.platform.clock import Clock, wall_clock_ms
from services.platform.revocations import Revocations

SECRET_BYTES: Final = 32
"""Random bytes of a device secret and of a refresh token."""
SESSION_ID_BYTES: Final = 12
"""Random bytes of a session id (16 URL-safe characters)."""


def new_secret() -> str:
    """A fresh secret: :data:`SECRET_BYTES` random bytes, URL-safe base64 without padding."""
    return secrets.token_urlsafe(SECRET_BYTES)


@dataclass(frozen=True, slots=True)
class TokenPolicy:
    """How long a session's tokens live."""

    access_minutes: int = 15
    refresh_days: int = 30
    access_seconds: int = 0
    """When not 0, an access token's lifetime in seconds instead of ``access_minutes``
    (tests that let a token expire mid-match)."""

    @property
    def access_ms(self) -> int:
        """An access token's lifetime in milliseconds."""
        return (self.access_seconds or self.access_minutes * 60) * 1000

    @property
    def refresh_ms(self) -> int:
        """A refresh token's lifetime in milliseconds."""
        return self.refresh_days * 86_400_000


class Sessions:
    """Opens, renews and ends sessions over :class:`AccountsStore` (async: the store runs in
    threads)."""

    def __init__(self, store: AccountsStore, signer: TokenSigner, ring: TokenKeyRing, *,
                 policy: TokenPolicy | None = None, clock: Clock = wall_clock_ms,
                 revocations: Revocations | None = None) -> None:
        self.store = store
        self.revocations = revocations
        """Where ended sessions are published, so that every server refuses their access
        tokens at once (None: they work until they expire)."""
        self.signer = signer
        self.ring = ring
        """What tokens presented to the service are checked against."""
        self.policy = policy or TokenPolicy()
        self.clock = clock
        self.admit: Callable[[str], Awaitable[None]] | None = None
        """Raises for a player who may not get tokens now (a banned one: the moderation's
        :meth:`~services.accounts.moderation.Moderation.admit`); None: everyone may."""

    def mint_access(self, player_id: str, session_id: str, now_ms: int, *,
                    has_account: bool = False, display_name: str = "") -> str:
        """The access token of ``player_id`` in ``session_id``, issued at ``now_ms``
        (``has_account``: the player has an identity linked, a guest no more;
        ``display_name``: their name, which tables and tournaments show)."""
        return mint_token(self.signer, player_id, Role.PLAYER,
                          ttl_seconds=self.policy.access_ms // 1000,
                          session_id=session_id, issued_at=now_ms // 1000,
                          has_account=has_account, display_name=display_name)

    async def _tokens(self, session: NewSession, refresh_token: str,
                      now_ms: int) -> accounts_pb2.SessionTokens:
        issued_s = now_ms // 1000
        has_account, name = await asyncio.to_thread(self.store.token_facts, session.player_id)
        return accounts_pb2.SessionTokens(
            access_token=self.mint_access(session.player_id, session.session_id, now_ms,
                                          has_account=has_account, display_name=name),
            access_expires_at_ms=(issued_s * 1000) + self.policy.access_ms,
            refresh_token=refresh_token, refresh_expires_at_ms=session.refresh_expires_ms,
            session_id=session.session_id, server_time_ms=now_ms,
        )

    async def open(self, player_id: str) -> accounts_pb2.SessionTokens:
        """A new session of ``player_id`` and its first tokens.

        :raises services.platform.errors.ServiceError: from :attr:`admit`.
        """
        if self.admit is not None:
            await self.admit(player_id)
        now = self.clock()
        refresh_token = new_secret()
        session = await asyncio.to_thread(
            self.store.open_session, secrets.token_urlsafe(SESSION_ID_BYTES), player_id,
            digest(refresh_token), now, now + self.policy.refresh_ms,
        )
        return await self._tokens(session, refresh_token, now)

    async def refresh(self, refresh_token: str) -> tuple[str, accounts_pb2.SessionTokens]:
        """Spend ``refresh_token`` for the next tokens of its session; its player and them.

        :raises services.accounts.store.RefreshRefused: see :meth:`AccountsStore.rotate`.
        """
        now = self.clock()
        following = new_secret()
        try:
            session = await asyncio.to_thread(
                self.store.rotate, digest(refresh_token), digest(following), now,
                now + self.policy.refresh_ms,
            )
        except RefreshRefused as refused:
            if refused.ended_session is not None:
                await self._revoke([refused.ended_session])
            raise
        if self.admit is not None:
            await self.admit(session.player_id)
        return session.player_id, await self._tokens(session, following, now)

    async def end(self, session_id: str, player_id: str) -> bool:
        """End ``player_id``'s session ``session_id`` (revoked everywhere); whether it was
        open."""
        was_open = await asyncio.to_thread(self.store.end_session, session_id, player_id,
                                           self.clock())
        await self._revoke([session_id])
        return was_open

    async def end_all(self, player_id: str) -> list[str]:
        """End every open session of ``player_id`` (revoked everywhere); the ids of those
        that were open."""
        ended = await asyncio.to_thread(self.store.end_sessions_of, player_id, self.clock())
        await self._revoke(ended)
        return ended

    async def _revoke(self, session_ids: list[str]) -> None:
        if self.revocations is not None and session_ids:
            await self.revocations.revoke(session_ids)
