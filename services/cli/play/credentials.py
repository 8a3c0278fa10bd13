"""The terminal client's session with the accounts service (docs/accounts.md "Sessions").

:class:`Credentials` signs the player in (a guest device and its secret, or an identity
provider's ID token), and is a gRPC client interceptor: every call on a channel it
intercepts carries the session's access token, refreshed with the refresh token before it
expires (at most a minute, and at most a third of its lifetime, before), one refresh at a
time for the prompt's thread and the stream's. A unary call refused as expired
(UNAUTHENTICATED ``token_expired``: this machine slept, or its clock is off) is refreshed and
sent once more; a stream so refused marks the token expired, so that the stream opened again
carries a new one. The sign-ins and ``Refresh`` go over the accounts channel without a token.

:class:`DeviceSecrets` keeps each server's device secret in ``~/.dast/device-secrets.json``
(mode 0600), since a device's first sign-in returns its secret once.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NamedTuple

import grpc

from dast.v1 import accounts_pb2, accounts_pb2_grpc
from services.platform.errors import Reason, reason_of

REFRESH_MARGIN_SECONDS: Final = 60.0
"""Refresh at the latest this long before the access token expires (at most a third of its
lifetime)."""
CALL_SECONDS: Final = 10.0


class _Details(NamedTuple):
    """A call's details with other metadata (``grpc.ClientCallDetails`` is an interface)."""

    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: bool | None
    compression: Any


def _with_token(details: grpc.ClientCallDetails, token: str) -> grpc.ClientCallDetails:
    metadata = [(key, value) for key, value in (details.metadata or ())
                if key != "authorization"]
    metadata.append(("authorization", f"Bearer {token}"))
    return _Details(details.method, details.timeout, metadata,
                    details.credentials, details.wait_for_ready, details.compression)


def _expired(error: grpc.RpcError) -> bool:
    return reason_of(error) == Reason.TOKEN_EXPIRED


@dataclass
class _Tokens:
    access: str
    refresh: str
    renew_at: float
    """When to refresh, on :attr:`Credentials.clock`."""


class Credentials(grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
                  grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
                  grpc.StreamStreamClientInterceptor):  # type: ignore[misc]
    """The signed-in player's tokens over an accounts service stub (see the module)."""

    def __init__(self, accounts: accounts_pb2_grpc.AccountsServiceStub, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.accounts = accounts
        self.clock = clock
        """Seconds, any origin: the session's expiries are converted to it."""
        self.player_id = ""
        self.display_name = ""
        self.refreshes = 0
        """Access tokens renewed so far."""
        self.refused_as_expired = 0
        """Calls the server refused because their access token had expired."""
        self._tokens: _Tokens | None = None
        self._lock = threading.Lock()

    # ---- signing in ----
    def sign_in_guest(self, device_id: str, device_secret: str, display_name: str) -> str:
        """Sign in as the guest of ``device_id``; the device secret a first sign-in returns
        ("" otherwise: keep the one given).

        :raises grpc.RpcError: as the accounts service answers (``device_secret_invalid``
            for a known device without its secret).
        """
        reply = self.accounts.SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
            device_id=device_id, device_secret=device_secret, display_name=display_name),
            timeout=CALL_SECONDS)
        self._signed_in(reply.player_id, reply.display_name, reply.tokens)
        return str(reply.device_secret)

    def sign_in_with_id_token(self, id_token: str, provider: str, display_name: str) -> None:
        """Sign in with an identity provider's ID token.

        :raises grpc.RpcError: as the accounts service answers (an ``id_token_*`` reason).
        """
        reply = self.accounts.SignInWithIdToken(accounts_pb2.SignInWithIdTokenRequest(
            provider=provider, id_token=id_token, display_name=display_name),
            timeout=CALL_SECONDS)
        self._signed_in(reply.player_id, reply.display_name, reply.tokens)

    def _signed_in(self, player_id: str, display_name: str,
                   tokens: accounts_pb2.SessionTokens) -> None:
        self.player_id, self.display_name = player_id, display_name
        with self._lock:
            self._tokens = self._kept(tokens)

    def _kept(self, tokens: accounts_pb2.SessionTokens) -> _Tokens:
        """``tokens`` with the time to renew them on this machine's clock (the server's
        expiry is read against the server's "now" of the same reply)."""
        lifetime = max(0.0, (tokens.access_expires_at_ms - tokens.server_time_ms) / 1000)
        renew_in = lifetime - min(REFRESH_MARGIN_SECONDS, lifetime / 3)
        return _Tokens(tokens.access_token, tokens.refresh_token, self.clock() + renew_in)

    # ---- the access token ----
    def access_token(self) -> str:
        """The access token to send now, refreshed first when it expires soon.

        :raises RuntimeError: before a sign-in.
        :raises grpc.RpcError: when the refresh is refused (the session ended:
            ``refresh_token_invalid``, ``refresh_token_reused``; sign in again).
        """
        with self._lock:
            tokens = self._signed_in_tokens()
            if self.clock() >= tokens.renew_at:
                tokens = self._refresh(tokens)
            return tokens.access

    def expired(self, token: str) -> None:
        """The server refused ``token`` as expired: refresh, unless done meanwhile."""
        with self._lock:
            self.refused_as_expired += 1
            tokens = self._signed_in_tokens()
            if tokens.access == token:
                self._refresh(tokens)

    def _signed_in_tokens(self) -> _Tokens:
        if self._tokens is None:
            raise RuntimeError("not signed in")
        return self._tokens

    def _refresh(self, tokens: _Tokens) -> _Tokens:
        """Spend the refresh token (under the lock: one refresh at a time, since a refresh
        token works once)."""
        reply = self.accounts.Refresh(accounts_pb2.RefreshRequest(refresh_token=tokens.refresh),
                                      timeout=CALL_SECONDS)
        self._tokens = self._kept(reply.tokens)
        self.refreshes += 1
        return self._tokens

    # ---- the interceptor ----
    def intercept_unary_unary(self, continuation: Callable[..., Any],
                              client_call_details: grpc.ClientCallDetails,
                              request: Any) -> Any:
        token = self.access_token()
        outcome = continuation(_with_token(client_call_details, token), request)
        error = outcome.exception()
        if error is None or not _expired(error):
            return outcome
        self.expired(token)
        return continuation(_with_token(client_call_details, self.access_token()), request)

    def intercept_unary_stream(self, continuation: Callable[..., Any],
                               client_call_details: grpc.ClientCallDetails,
                               request: Any) -> Any:
        token = self.access_token()
        return _WatchedStream(continuation(_with_token(client_call_details, token), request),
                              lambda: self.expired(token))

    def intercept_stream_stream(self, continuation: Callable[..., Any],
                                client_call_details: grpc.ClientCallDetails,
                                request_iterator: Any) -> Any:
        """A Play stream: opened with the access token of now (renewed on the stream
        itself: :mod:`services.cli.play.session`)."""
        token = self.access_token()
        return _WatchedStream(
            continuation(_with_token(client_call_details, token), request_iterator),
            lambda: self.expired(token))


class _WatchedStream:
    """A server stream whose refusal as expired marks its token expired (then raises)."""

    def __init__(self, call: Any, on_expired: Callable[[], None]) -> None:
        self._call = call
        self._on_expired = on_expired

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self._call
        except grpc.RpcError as error:
            if _expired(error):
                with contextlib.suppress(grpc.RpcError):
                    self._on_expired()
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)  # cancel(), code(), details(), …


class DeviceSecrets:
    """The device secrets of this machine, by accounts server (a JSON file, mode 0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, server: str) -> str:
        """The secret kept for ``server`` ("" when none)."""
        return str(self._read().get(server, ""))

    def put(self, server: str, secret: str) -> None:
        """Keep ``secret`` for ``server`` (written before anything else uses the session)."""
        kept = {**self._read(), server: secret}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as stored:
            json.dump(kept, stored, indent=1, sort_keys=True)

    def _read(self) -> dict[str, Any]:
        try:
            kept = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return kept if isinstance(kept, dict) else {}
