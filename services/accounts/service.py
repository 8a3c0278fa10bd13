"""The gRPC ``dast.v1.AccountsService``: guest sign-in, refresh, sign-out, sign-in with an
identity provider's ID token, linking identities, and profiles (accounts.proto).

``SignInGuest``, ``SignInWithIdToken`` and ``Refresh`` are open (they hand out tokens); the
other methods read the caller from the token the server's interceptor checked.

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

An ID token is verified by :class:`~services.accounts.oidc.IdTokenVerifier` (the providers of
``DAST_OIDC_PROVIDERS``). Its first sign-in creates a player whose id is ``a-`` and 16 random
hex digits (never a guest's ``g-``); ``LinkIdentity`` instead links it to the caller's player,
whatever its id, so a guest who links an identity keeps everything stored under its id.

A profile (display name, avatar id, locale: :mod:`services.accounts.profiles` says what each
may hold) is read whole by its player, with a session of this service, and by services and
operators; anyone else signed in reads its public part (:data:`PUBLIC_PROFILE`). Only the
player changes it: a service's or an admin's token is refused (renaming a player is not a
service's business, and moderation is not this call's).
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Final

import grpc
import structlog

from dast.v1 import accounts_pb2, accounts_pb2_grpc
from services.accounts.moderation import Moderation
from services.accounts.oidc import IdTokenVerifier, VerifiedIdentity
from services.accounts.oidc_providers import OidcProvider
from services.accounts.profiles import canonical_locale, check_avatar_id
from services.accounts.reasons import AccountsReason
from services.accounts.retention import GuestRetention
from services.accounts.sessions import Sessions, new_secret
from services.accounts.store import (
    DEVICE_ID_CHARS,
    EMAIL_CHARS,
    PROVIDER_CHARS,
    SUBJECT_CHARS,
    AccountNotFound,
    DeviceSecretMismatch,
    GuestAlreadyMoved,
    Identity,
    IdentityLinkedElsewhere,
    IdentityNotLinked,
    LastWayIn,
    Profile,
    ProfileChange,
    ProviderAlreadyLinked,
    RefreshRefused,
    digest,
)
from services.platform.auth import (
    GUEST_ID_PREFIX,
    AuthError,
    Role,
    bearer_of,
    current_identity,
    verify_token,
)
from services.platform.auth import Identity as Caller
from services.platform.errors import Reason, ServiceError, map_exception
from services.platform.validation import check_id, clean_display_name, quoted_input

MIN_DEVICE_ID_CHARS: Final = 8
PLAYER_ID_HEX: Final = 16
"""Hex digits after ``g-`` in a guest's player id (as the lobby's guests have), and after
``a-`` in the id of a player an identity provider's sign-in created."""
ACCOUNT_ID_PREFIX: Final = "a-"
PUBLIC_PROFILE: Final = ("player_id", "display_name", "avatar_id")
"""The fields of a profile every signed-in caller may read: what other players see of a
player at a table. The locale (which tells where a person may live) and when the player was
created are the player's own."""
_log = structlog.get_logger(component="accounts")

map_exception(DeviceSecretMismatch, grpc.StatusCode.UNAUTHENTICATED,
              AccountsReason.DEVICE_SECRET_INVALID)
map_exception(GuestAlreadyMoved, grpc.StatusCode.FAILED_PRECONDITION,
              AccountsReason.GUEST_ALREADY_MOVED)
map_exception(IdentityLinkedElsewhere, grpc.StatusCode.FAILED_PRECONDITION,
              AccountsReason.IDENTITY_LINKED_ELSEWHERE)
map_exception(ProviderAlreadyLinked, grpc.StatusCode.FAILED_PRECONDITION,
              AccountsReason.PROVIDER_ALREADY_LINKED)
map_exception(IdentityNotLinked, grpc.StatusCode.NOT_FOUND, AccountsReason.IDENTITY_NOT_LINKED)
map_exception(LastWayIn, grpc.StatusCode.FAILED_PRECONDITION, AccountsReason.LAST_WAY_IN)
map_exception(AccountNotFound, grpc.StatusCode.NOT_FOUND, AccountsReason.ACCOUNT_NOT_FOUND)


def new_guest_id() -> str:
    """A fresh guest player id: ``g-`` and 16 random hex digits."""
    return f"{GUEST_ID_PREFIX}{secrets.token_hex(PLAYER_ID_HEX // 2)}"


def new_account_id() -> str:
    """A fresh player id for an identity provider's first sign-in: ``a-`` and 16 hex digits."""
    return f"{ACCOUNT_ID_PREFIX}{secrets.token_hex(PLAYER_ID_HEX // 2)}"


def _provider_name(raw: str, *, required: bool) -> str | None:
    """The provider a request names (None: empty, and ``required`` is False).

    :raises ServiceError: INVALID_ARGUMENT ``invalid_request`` for an empty (when required)
        or over-long name.
    """
    if not raw and not required:
        return None
    if not raw or len(raw) > PROVIDER_CHARS:
        raise _invalid_field("provider", f"must be a provider's name of 1 to {PROVIDER_CHARS} "
                             f"characters, not {quoted_input(raw)}")
    return raw


def _invalid_field(field: str, problem: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                        f"{field} {problem}", metadata={"field": field})


def _suggested_name(verified: VerifiedIdentity) -> str:
    """The provider's name of the person as a display name ("" when it cannot be one)."""
    try:
        return clean_display_name(verified.name or "")
    except ServiceError:
        return ""


def _email_of(verified: VerifiedIdentity) -> str:
    """The address to keep with an identity: only one the provider verified."""
    email = verified.email or ""
    return email if verified.email_verified and len(email) <= EMAIL_CHARS else ""


def _profile_message(profile: Profile, *, full: bool) -> accounts_pb2.Profile:
    """``profile`` on the wire: whole when ``full``, else only :data:`PUBLIC_PROFILE` (so a
    field added later stays private until it is named there)."""
    whole = accounts_pb2.Profile(
        player_id=profile.player_id, display_name=profile.display_name,
        avatar_id=profile.avatar_id, locale=profile.locale, created_at_ms=profile.created_ms,
        full=True)
    if full:
        return whole
    public = accounts_pb2.Profile(full=False)
    for name in PUBLIC_PROFILE:
        setattr(public, name, getattr(whole, name))
    return public


def _reads_whole_profile(caller: Caller, player_id: str) -> bool:
    """Whether ``caller`` may read ``player_id``'s whole profile: the player, in a session of
    this service (a lobby guest's token proves less: only that its holder knows a device id),
    or a service or operator."""
    return caller.is_privileged or (caller.session_id is not None
                                    and caller.player_id == player_id)


def _new_display_name(raw: str) -> str:
    """The display name an update asks for, cleaned as at sign-in.

    :raises ServiceError: INVALID_ARGUMENT ``invalid_display_name`` for an empty name (a
        player always has one) and for the refusals of :func:`clean_display_name`.
    """
    name = clean_display_name(raw)
    if not name:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_DISPLAY_NAME,
                           "display_name is empty: a player always has a name",
                           metadata={"field": "display_name"})
    return name


def _profile_change(request: accounts_pb2.UpdateProfileRequest) -> ProfileChange:
    """The change ``request`` asks for, each field it sets checked.

    :raises ServiceError: INVALID_ARGUMENT for a field that breaks its rules, or a request
        setting none.
    """
    change = ProfileChange(
        display_name=(_new_display_name(request.display_name)
                      if request.HasField("display_name") else None),
        avatar_id=check_avatar_id(request.avatar_id) if request.HasField("avatar_id") else None,
        locale=canonical_locale(request.locale) if request.HasField("locale") else None,
    )
    if not change.values():
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                           "UpdateProfile sets none of display_name, avatar_id and locale: "
                           "set the fields to change")
    return change


def _linked(identity: Identity) -> accounts_pb2.LinkedIdentity:
    return accounts_pb2.LinkedIdentity(provider=identity.provider, subject=identity.subject,
                                       email=identity.email, linked_at_ms=identity.linked_ms)


class AccountsService(accounts_pb2_grpc.AccountsServiceServicer):
    """The servicer."""

    def __init__(self, sessions: Sessions, providers: tuple[OidcProvider, ...] = ()) -> None:
        self.sessions = sessions
        self.store = sessions.store
        self.verifier = IdTokenVerifier(providers)
        self.moderation: Moderation | None = None
        """The moderation service mounted beside it (its bans refuse sign-ins)."""
        self.retention: GuestRetention | None = None
        """What erases idle guests (run it: :meth:`GuestRetention.run`)."""

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
            identity = verify_token(self.sessions.ring, token)
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
        player_id, session_id = self._session_of_caller()
        await self.sessions.end(session_id, player_id)
        return accounts_pb2.SignOutResponse()

    async def SignOutEverywhere(
        self, request: accounts_pb2.SignOutEverywhereRequest,
        context: grpc.aio.ServicerContext,
    ) -> accounts_pb2.SignOutEverywhereResponse:
        ended = await self.sessions.end_all(current_identity().player_id)
        return accounts_pb2.SignOutEverywhereResponse(sessions_ended=len(ended))

    async def DeleteAccount(
        self, request: accounts_pb2.DeleteAccountRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.DeleteAccountResponse:
        caller = current_identity()
        if caller.role is not Role.PLAYER:
            raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                               "only a player deletes their own account (operators: "
                               "ModerationService.ErasePlayer)")
        self._session_of_caller()  # an account is deleted from one of its own sessions
        if request.confirm_player_id != caller.player_id:
            raise _invalid_field("confirm_player_id", "must be the caller's own player id, "
                                 "typed again to confirm the deletion")
        if self.moderation is None:
            raise RuntimeError("the accounts service runs without its moderation")
        await self.moderation.erase(caller.player_id, actor=None)
        return accounts_pb2.DeleteAccountResponse()

    async def SignInWithIdToken(
        self, request: accounts_pb2.SignInWithIdTokenRequest,
        context: grpc.aio.ServicerContext,
    ) -> accounts_pb2.SignInWithIdTokenResponse:
        display_name = clean_display_name(request.display_name)
        verified = await self._verified(request.provider, request.id_token)
        player_id = new_account_id()
        signed_in = await asyncio.to_thread(
            self.store.sign_in_identity, verified.provider, verified.subject,
            _email_of(verified), player_id,
            display_name or _suggested_name(verified) or f"Player-{player_id[-4:]}",
            self.sessions.clock(),
        )
        tokens = await self.sessions.open(signed_in.player_id)
        if signed_in.is_new:
            _log.info("account_created", player_id=signed_in.player_id,
                      provider=verified.provider)
        return accounts_pb2.SignInWithIdTokenResponse(
            player_id=signed_in.player_id, display_name=signed_in.display_name,
            created=signed_in.is_new, tokens=tokens)

    async def LinkIdentity(
        self, request: accounts_pb2.LinkIdentityRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.LinkIdentityResponse:
        player_id, _ = self._session_of_caller()
        verified = await self._verified(request.provider, request.id_token)
        linked = await asyncio.to_thread(
            self.store.link_identity, player_id, verified.provider, verified.subject,
            _email_of(verified), self.sessions.clock())
        _log.info("identity_linked", player_id=player_id, provider=verified.provider)
        return accounts_pb2.LinkIdentityResponse(identity=_linked(linked))

    async def UnlinkIdentity(
        self, request: accounts_pb2.UnlinkIdentityRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.UnlinkIdentityResponse:
        player_id, _ = self._session_of_caller()
        provider = _provider_name(request.provider, required=True)
        assert provider is not None
        subject = request.subject
        if not subject or len(subject) > SUBJECT_CHARS or not subject.isprintable():
            raise _invalid_field("subject", f"must be 1 to {SUBJECT_CHARS} printable "
                                 "characters (as ListIdentities gives it)")
        await asyncio.to_thread(self.store.unlink_identity, player_id, provider, subject)
        _log.info("identity_unlinked", player_id=player_id, provider=provider)
        return accounts_pb2.UnlinkIdentityResponse()

    async def ListIdentities(
        self, request: accounts_pb2.ListIdentitiesRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.ListIdentitiesResponse:
        identities, devices = await asyncio.to_thread(self.store.identities_of,
                                                      current_identity().player_id)
        return accounts_pb2.ListIdentitiesResponse(
            identities=[_linked(identity) for identity in identities], devices=devices)

    async def GetProfile(
        self, request: accounts_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.GetProfileResponse:
        caller = current_identity()
        player_id = request.player_id
        if not player_id:
            if caller.is_privileged:
                raise _invalid_field("player_id", "is empty: a service's or an operator's "
                                     "token names the player whose profile to read")
            player_id = caller.player_id
        profile = await asyncio.to_thread(self.store.profile, player_id)
        return accounts_pb2.GetProfileResponse(profile=_profile_message(
            profile, full=_reads_whole_profile(caller, player_id)))

    async def UpdateProfile(
        self, request: accounts_pb2.UpdateProfileRequest, context: grpc.aio.ServicerContext
    ) -> accounts_pb2.UpdateProfileResponse:
        if current_identity().is_privileged:
            raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                               "UpdateProfile changes the caller's own profile: it takes a "
                               "player's token, not a service's or an operator's")
        player_id, _ = self._session_of_caller()
        change = _profile_change(request)
        profile = await asyncio.to_thread(self.store.update_profile, player_id, change)
        _log.info("profile_updated", player_id=player_id, fields=sorted(change.values()))
        return accounts_pb2.UpdateProfileResponse(profile=_profile_message(profile, full=True))

    async def _verified(self, provider: str, id_token: str) -> VerifiedIdentity:
        """The identity ``id_token`` proves, from the provider named ``provider`` (empty: the
        one whose issuer the token names)."""
        name = _provider_name(provider, required=False)
        if not id_token:
            raise _invalid_field("id_token", "is empty")
        return await self.verifier.verify(id_token, name)

    @staticmethod
    def _session_of_caller() -> tuple[str, str]:
        """The caller's player and session: the caller must be signed in with a session of
        this service.

        :raises ServiceError: FAILED_PRECONDITION ``no_session`` for another token (a
            service's, or the lobby's guest sign-in's).
        """
        caller = current_identity()
        if caller.session_id is None:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION, AccountsReason.NO_SESSION,
                "this token belongs to no session (sign in through AccountsService)")
        return caller.player_id, caller.session_id
