"""The gRPC ``dast.v1.AccountsService``: guest sign-in, refresh, sign-out (accounts.proto).

``SignInGuest`` and ``Refresh`` are open (they hand out tokens); the other methods read the
caller from the token the server's interceptor checked.

A guest of the lobby's own sign-in (a ``g-`` player id, a token without a session) moves
over by calling ``SignInGuest`` for a device id new here with that token as its bearer: the
new device gets the guest's player id, so their matches, ratings and history stay theirs.
The token proves what the lobby's sign-in proves (that the caller knows the device id); from
then on the accounts service asks for the device secret. A guest moves once: a second
device id offering the same player is refused (``guest_already_moved``).

Each method checks the meaning of its fields (the server's guard has refused malformed ones
already), calls the store in a thread and answers; refusals are
:class:`~services.platform.errors.ServiceError`\\ s (or store errors mapped below), which the
server's guard turns into statuses.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Final

import grpc
import structlog

from dast.v1 import accounts_pb2, accounts_pb2_grpc
from services.accounts.reasons import AccountsReason
from services.accounts.sessions import Sessions, new_secret
from services.accounts.store import (
    DEVICE_ID_CHARS,
    DeviceSecretMismatch,
    GuestAlreadyMoved,
    RefreshRefused,
    digest,
)
from services.platform.auth import (
    GUEST_ID_PREFIX,
    AuthError,
    bearer_of,
    current_identity,
    verify_token,
)
from services.platform.errors import Reason, ServiceError, map_exception
from services.platform.validation import check_id, clean_display_name

MIN_DEVICE_ID_CHARS: Final = 8
PLAYER_ID_HEX: Final = 16
"""Hex digits after ``g-`` in a guest's player id (as the lobby's guests have)."""
_log = structlog.get_logger(component="accounts")

map_exception(DeviceSecretMismatch, grpc.StatusCode.UNAUTHENTICATED,
              AccountsReason.DEVICE_SECRET_INVALID)
map_exception(GuestAlreadyMoved, grpc.StatusCode.FAILED_PRECONDITION,
              AccountsReason.GUEST_ALREADY_MOVED)


def new_guest_id() -> str:
    """A fresh guest player id: ``g-`` and 16 random hex digits."""
    return f"{GUEST_ID_PREFIX}{secrets.token_hex(PLAYER_ID_HEX // 2)}"


class AccountsService(accounts_pb2_grpc.AccountsServiceServicer):
    """The servicer."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self.store = sessions.store

    async def SignInGuest(
        self, request: accounts_pb2.AccountsServiceSignInGuestRequest,
        context: grpc.aio.ServicerContext,
    ) -> accounts_pb2.AccountsServiceSignInGuestResponse:
        device_id = check_id(request.device_id, "device_id", min_chars=MIN_DEVICE_ID_CHARS,
                             max_chars=DEVICE_ID_CHARS)
        display_name = clean_display_name(request.display_name)
        player_id = self._lobby_guest(context) or new_guest_id()
        device_secret = new_secret()
        signed_in = await asyncio.to_thread(
            self.store.sign_in_guest, device_id, digest(device_secret),
            display_name or f"Guest-{player_id[-4:]}", player_id, self.sessions.clock(),
            check=request.device_secret or None,
        )
        tokens = await self.sessions.open(signed_in.player_id)
        if signed_in.is_new:
            _log.info("guest_created", player_id=signed_in.player_id)
        return accounts_pb2.AccountsServiceSignInGuestResponse(
            player_id=signed_in.player_id, display_name=signed_in.display_name,
            device_secret=device_secret if signed_in.is_new else "", tokens=tokens,
        )

    def _lobby_guest(self, context: grpc.aio.ServicerContext) -> str | None:
        """The guest player id of a lobby token the call carries (a guest moving over), or
        None without one.

        :raises ServiceError: UNAUTHENTICATED for a token that is not a valid lobby guest's.
        """
        token = bearer_of(context.invocation_metadata())
        if token is None:
            return None
        try:
            identity = verify_token(self.sessions.secret, token)
        except AuthError as error:
            raise ServiceError(grpc.StatusCode.UNAUTHENTICATED, error.reason,
                               error.message) from None
        if not identity.is_guest or identity.session_id is not None:
            raise ServiceError(
                grpc.StatusCode.UNAUTHENTICATED, Reason.TOKEN_INVALID,
                "SignInGuest takes only a token of the lobby's guest sign-in (to move that "
                "guest over), or none")
        return identity.player_id

    async def Refresh(
        self, request: accounts_pb2.RefreshRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.RefreshResponse:
        if not request.refresh_token:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                               "refresh_token is empty", metadata={"field": "refresh_token"})
        try:
            player_id, tokens = await self.sessions.refresh(request.refresh_token)
        except RefreshRefused as refused:
            if refused.reused:
                _log.warning("refresh_token_reused")
            raise ServiceError(
                grpc.StatusCode.UNAUTHENTICATED,
                AccountsReason.REFRESH_TOKEN_REUSED if refused.reused
                else AccountsReason.REFRESH_TOKEN_INVALID,
                str(refused),
            ) from None
        return accounts_pb2.RefreshResponse(player_id=player_id, tokens=tokens)

    async def SignOut(
        self, request: accounts_pb2.SignOutRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.SignOutResponse:
        caller = current_identity()
        if caller.session_id is None:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION, AccountsReason.NO_SESSION,
                "this token belongs to no session (sign in through AccountsService)")
        await self.sessions.end(caller.session_id, caller.player_id)
        return accounts_pb2.SignOutResponse()

    async def SignOutEverywhere(
        self, request: accounts_pb2.SignOutEverywhereRequest,
        context: grpc.aio.ServicerContext,
    ) -> accounts_pb2.SignOutEverywhereResponse:
        ended = await self.sessions.end_all(current_identity().player_id)
        return accounts_pb2.SignOutEverywhereResponse(sessions_ended=len(ended))
