"""Moderation: the gRPC ``dast.v1.ModerationService`` (moderation.proto), served by the
accounts service for operators (admin tokens only), and the bans it publishes.

A ban is written to the accounts' database with its entry in the operators' action log
(:class:`~services.accounts.moderation_store.ModerationStore`), then:

- the player's sessions end (published on the revocation list, so their refresh tokens no
  longer work and their access tokens stop on every server at once);
- the ban goes on the ban list every server reads (:mod:`services.platform.bans`): every
  call of the player is refused and their open streams end, and the lobby and the
  tournament service, told of it, take them out of their tables and tournaments;
- every later sign-in and refresh of theirs is refused here, from the database
  (:meth:`Moderation.admit`), whatever the ban list holds.

The ban list is made to agree with the database when the service starts and every
:data:`REPUBLISH_SECONDS` (:meth:`Moderation.publish_bans`): a process killed between its
database and the list loses nothing, and bans that ran out leave the list.
"""

from __future__ import annotations

import asyncio
from typing import Final

import grpc
import structlog

from dast.v1 import moderation_pb2, moderation_pb2_grpc
from services.accounts.admin_log import AdminAction, AdminEntry, canonical_detail
from services.accounts.moderation_store import BanRecord, ModerationStore
from services.accounts.reasons import ModerationReason
from services.accounts.sessions import Sessions
from services.accounts.store import FoundPlayer
from services.platform.auth import Role, current_identity
from services.platform.bans import (
    BAN_REASON_CHARS,
    ERASURES_LISTED_DAYS,
    Ban,
    Bans,
    banned_error,
    erased_entry,
)
from services.platform.errors import Reason, ServiceError
from services.platform.validation import check_id, clean_display_name, quoted_input

REPUBLISH_SECONDS: Final = 60.0
QUERY_CHARS: Final = 64
DEFAULT_PAGE: Final = 20
MAX_PAGE: Final = 100
DEFAULT_LOG_PAGE: Final = 100
MAX_LOG_PAGE: Final = 1000
_log = structlog.get_logger(component="moderation")


def _invalid(field: str, problem: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                        f"{field} {problem}", metadata={"field": field})


def _page_size(requested: int, default: int, largest: int) -> int:
    if requested < 0 or requested > largest:
        raise _invalid("page_size", f"must be 0 to {largest}, not {requested}")
    return requested or default


def _text(raw: str, field: str, *, required: bool) -> str:
    """``raw`` cleaned as every text others see (no control or invisible characters)."""
    if not raw:
        if required:
            raise _invalid(field, "is required")
        return ""
    try:
        return clean_display_name(raw, max_chars=BAN_REASON_CHARS, field=field)
    except ServiceError as refused:
        raise _invalid(field, refused.message.removeprefix(f"{field} ")) from None


def _require_admin() -> str:
    caller = current_identity()
    if caller.role is not Role.ADMIN:
        raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                           "moderation takes an operator's (admin) token")
    return caller.player_id


def ban_message(record: BanRecord) -> moderation_pb2.PlayerBan:
    """A standing ban as the API shows it."""
    return moderation_pb2.PlayerBan(until_ms=record.ban.until_ms or 0,
                                    reason=record.ban.reason, banned_by=record.banned_by,
                                    banned_at_ms=record.banned_ms)


def entry_message(entry: AdminEntry) -> moderation_pb2.AdminActionEntry:
    """An entry of the action log as the API shows it."""
    return moderation_pb2.AdminActionEntry(
        seq=entry.seq, at_ms=entry.at_ms, actor=entry.actor, action=entry.action,
        subject=entry.subject, detail_json=canonical_detail(entry.detail),
        prev_hash=entry.prev_hash, hash=entry.hash)


class Moderation:
    """Bans over the store: deciding them, publishing them, refusing banned players'
    sign-ins."""

    def __init__(self, store: ModerationStore, sessions: Sessions, bans: Bans) -> None:
        self.store = store
        self.sessions = sessions
        self.bans = bans
        self.clock = sessions.clock

    async def admit(self, player_id: str) -> None:
        """Refuse a sign-in or refresh of a banned player.

        :raises ServiceError: PERMISSION_DENIED ``player_banned`` with the ban's end and
            reason.
        """
        record = await asyncio.to_thread(self.store.ban_of, player_id, self.clock())
        if record is not None:
            raise banned_error(record.ban)
        if await asyncio.to_thread(self.store.is_erased, player_id):
            raise banned_error(erased_entry())

    async def ban(self, player_id: str, ban: Ban, actor: str) -> tuple[BanRecord, AdminEntry]:
        """Ban ``player_id`` everywhere (see the module docstring)."""
        now = self.clock()
        entry = await asyncio.to_thread(self.store.ban, player_id, ban, actor, now)
        await self.bans.publish(player_id, ban)
        ended = await self.sessions.end_all(player_id)
        _log.info("player_banned", player_id=player_id, by=actor, until_ms=ban.until_ms,
                  sessions_ended=len(ended), action_seq=entry.seq)
        return BanRecord(player_id, ban, actor, now), entry

    async def lift(self, player_id: str, actor: str, note: str) -> tuple[bool, AdminEntry]:
        """Lift ``player_id``'s ban everywhere; whether there was one."""
        lifted, entry = await asyncio.to_thread(self.store.lift, player_id, actor, note,
                                                self.clock())
        await self.bans.publish(player_id, None)
        _log.info("ban_lifted", player_id=player_id, by=actor, had_ban=lifted,
                  action_seq=entry.seq)
        return lifted, entry

    async def erase(self, player_id: str, *, actor: str | None) -> AdminEntry | None:
        """Delete ``player_id``'s account (``actor``: the operator erasing it; None: the
        player): its identities, devices, name and sessions go; the player id stays in the
        signed logs and the figures, which every service then shows as a deleted player.

        Recorded first, so that a process killed halfway still has the erasure to finish:
        the next :meth:`publish_bans` erases again what this store holds of the player."""
        now = self.clock()
        entry = await asyncio.to_thread(self.store.erase, player_id, now, actor=actor)
        await self.sessions.end_all(player_id)
        await asyncio.to_thread(self.sessions.store.erase_player, player_id)
        await self.bans.publish(player_id, erased_entry())
        _log.info("account_erased", player_id=player_id, by=actor or "the player",
                  action_seq=entry.seq if entry is not None else None)
        return entry

    async def publish_bans(self) -> None:
        """Make the ban list agree with the database: every standing ban and every account
        deleted in the last :data:`ERASURES_LISTED_DAYS` on it (each erasure finished
        again), every other entry off it."""
        now = self.clock()
        standing = await asyncio.to_thread(self.store.standing_bans, now)
        for player_id in await asyncio.to_thread(
                self.store.erased_since, now - ERASURES_LISTED_DAYS * 86_400_000):
            await asyncio.to_thread(self.sessions.store.erase_player, player_id)
            standing[player_id] = erased_entry()
        for player_id, ban in standing.items():
            if self.bans.banned().get(player_id) != ban:
                await self.bans.publish(player_id, ban)
        for player_id in set(self.bans.banned()) - set(standing):
            await self.bans.publish(player_id, None)

    async def run(self, period_seconds: float = REPUBLISH_SECONDS) -> None:
        """:meth:`publish_bans` now and every ``period_seconds``, forever."""
        while True:
            try:
                await self.publish_bans()
            except Exception:
                _log.exception("bans_not_published")
            await asyncio.sleep(period_seconds)


class ModerationService(moderation_pb2_grpc.ModerationServiceServicer):
    """The servicer."""

    def __init__(self, moderation: Moderation) -> None:
        self.moderation = moderation
        self.store = moderation.store
        self.accounts = moderation.sessions.store

    async def FindPlayers(
        self, request: moderation_pb2.FindPlayersRequest, context: grpc.aio.ServicerContext
    ) -> moderation_pb2.FindPlayersResponse:
        actor = _require_admin()
        query = request.query.strip()
        if not query or len(query) > QUERY_CHARS:
            raise _invalid("query", f"must be 1 to {QUERY_CHARS} characters, not "
                                    f"{quoted_input(request.query)}")
        limit = _page_size(request.page_size, DEFAULT_PAGE, MAX_PAGE)
        found = await asyncio.to_thread(self.accounts.find_players, query, limit)
        bans = await asyncio.to_thread(self.store.bans_of, [p.player_id for p in found],
                                       self.moderation.clock())
        # The log keeps whom the search found, not what was typed: a name typed here must go
        # with its account when the account is deleted.
        await asyncio.to_thread(self.store.record, actor, AdminAction.FIND_PLAYERS, "",
                                {"found": [player.player_id for player in found]},
                                self.moderation.clock())
        return moderation_pb2.FindPlayersResponse(
            players=[self._found(player, bans.get(player.player_id)) for player in found])

    @staticmethod
    def _found(player: FoundPlayer, ban: BanRecord | None) -> moderation_pb2.FoundPlayer:
        message = moderation_pb2.FoundPlayer(
            player_id=player.player_id, display_name=player.display_name,
            created_at_ms=player.created_ms, providers=player.providers,
            devices=player.devices)
        if ban is not None:
            message.ban.CopyFrom(ban_message(ban))
        return message

    async def BanPlayer(
        self, request: moderation_pb2.BanPlayerRequest, context: grpc.aio.ServicerContext
    ) -> moderation_pb2.BanPlayerResponse:
        actor = _require_admin()
        player_id = await self._known_player(request.player_id)
        reason = _text(request.reason, "reason", required=True)
        if request.until_ms and request.until_ms <= self.moderation.clock():
            raise _invalid("until_ms", "is in the past: a ban must end in the future (0: "
                                       "until lifted)")
        if request.until_ms < 0:
            raise _invalid("until_ms", "must not be negative")
        record, entry = await self.moderation.ban(
            player_id, Ban(request.until_ms or None, reason), actor)
        return moderation_pb2.BanPlayerResponse(ban=ban_message(record), action_seq=entry.seq)

    async def LiftBan(
        self, request: moderation_pb2.LiftBanRequest, context: grpc.aio.ServicerContext
    ) -> moderation_pb2.LiftBanResponse:
        actor = _require_admin()
        player_id = await self._known_player(request.player_id)
        note = _text(request.note, "note", required=False)
        lifted, entry = await self.moderation.lift(player_id, actor, note)
        return moderation_pb2.LiftBanResponse(lifted=lifted, action_seq=entry.seq)

    async def ErasePlayer(
        self, request: moderation_pb2.ErasePlayerRequest, context: grpc.aio.ServicerContext
    ) -> moderation_pb2.ErasePlayerResponse:
        actor = _require_admin()
        player_id = await self._known_player(request.player_id)
        entry = await self.moderation.erase(player_id, actor=actor)
        return moderation_pb2.ErasePlayerResponse(action_seq=entry.seq if entry else 0)

    async def ListAdminActions(
        self, request: moderation_pb2.ListAdminActionsRequest,
        context: grpc.aio.ServicerContext,
    ) -> moderation_pb2.ListAdminActionsResponse:
        _require_admin()
        if request.after_seq < 0:
            raise _invalid("after_seq", "must not be negative")
        limit = _page_size(request.page_size, DEFAULT_LOG_PAGE, MAX_LOG_PAGE)
        entries = await asyncio.to_thread(self.store.actions, request.after_seq, limit)
        return moderation_pb2.ListAdminActionsResponse(
            entries=[entry_message(entry) for entry in entries])

    async def _known_player(self, raw: str) -> str:
        player_id = check_id(raw, "player_id")
        if not await asyncio.to_thread(self.accounts.has_player, player_id):
            raise ServiceError(grpc.StatusCode.NOT_FOUND, ModerationReason.UNKNOWN_PLAYER,
                               f"no player has the id {quoted_input(player_id)}",
                               metadata={"field": "player_id"})
        return player_id

