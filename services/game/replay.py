"""The gRPC ``dast.v1.ReplayService``: any match at any seq, through one viewpoint's eyes.

A frame is the state after event ``seq``: the stored log up to ``seq`` replayed by the
engine exactly as the repository replays a game (:func:`~services.game.repository.snapshot_of`
and :meth:`~services.game.repository.GameSnapshot.advanced`),
then projected with the game's own ``view`` and ``redact``, the code behind ``GetView`` and
``Subscribe``. No view is built here: a replay shows a seat what the live match showed it.

Who may see what (replay.proto): once a match is over its record is open to its players,
to service and admin tokens and, when the table admitted spectators, to any player, from
every seat and from above. While it runs, a seated player replays their own seat or the
spectators' view; everyone else only the spectators' view (where the table admits them),
service and admin tokens included: they hold no seat, and a replay is no back door to the
cards. Every refusal comes before the request's seq is looked at, so a caller who may not
watch learns nothing of the log, not even its length.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import grpc

from dast.v1 import log_pb2, replay_pb2, replay_pb2_grpc
from engine.core.payload import put
from services.game.control import seat_control_of
from services.game.names import NO_NAMES
from services.game.repository import GameRepository, GameSnapshot, snapshot_of
from services.game.service import check_game_id
from services.game.turns import named_view
from services.platform.auth import Identity, current_identity
from services.platform.errors import Reason, ServiceError
from services.platform.store import SeatName
from services.platform.validation import quoted_input

SERVICE_NAME: Final[str] = replay_pb2.DESCRIPTOR.services_by_name["ReplayService"].full_name
DEFAULT_PAGE_FRAMES: Final = 32
MAX_PAGE_FRAMES: Final = 64
"""The frames one ListReplayFrames call returns when it names no page size, and at most (a
page of frames from above costs up to about 50 ms of CPU: the bound keeps one caller's
limit of calls from buying more than that)."""
FINISHED_LOGS_CACHED: Final = 64
"""How many finished matches' logs a replica keeps (they never change once over)."""

_SEAT = replay_pb2.REPLAY_VIEWPOINT_SEAT
_SPECTATOR = replay_pb2.REPLAY_VIEWPOINT_SPECTATOR
_TABLE = replay_pb2.REPLAY_VIEWPOINT_TABLE


@dataclass(frozen=True, slots=True)
class Viewpoint:
    """Through whose eyes a frame is seen."""

    kind: replay_pb2.ReplayViewpoint.ValueType
    """REPLAY_VIEWPOINT_SEAT, _SPECTATOR or _TABLE (never UNSPECIFIED)."""
    seat: int | None = None
    """The seat of a REPLAY_VIEWPOINT_SEAT viewpoint."""


def _invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST, message)


def _not_your_seat(identity: Identity, seat: int) -> ServiceError:
    return ServiceError(grpc.StatusCode.PERMISSION_DENIED, Reason.NOT_YOUR_SEAT,
                        f"{identity.role} {quoted_input(identity.player_id)} may not replay "
                        f"seat {seat} "
                        "of a match that is not over")


async def check_may_watch(
    repository: GameRepository, head: GameSnapshot, identity: Identity
) -> None:
    """Refuse a player who holds no seat in a match whose table admits no spectators.

    :raises ServiceError: PERMISSION_DENIED, reason ``spectators_not_allowed``.
    """
    if (identity.is_privileged or identity.reads_every_log
            or head.seat_of(identity.player_id) is not None):
        return
    if not await repository.spectators_allowed(head.game_id):
        raise ServiceError(
            grpc.StatusCode.PERMISSION_DENIED, Reason.SPECTATORS_NOT_ALLOWED,
            f"the table of game {quoted_input(head.game_id)} allows no spectators",
        )


async def watched_head(repository: GameRepository, game_id: str
                       ) -> tuple[Identity, GameSnapshot]:
    """The caller and the match ``game_id`` as it stands, once the caller may watch it
    (:func:`check_may_watch`): the first step of every replay and audit of a stored match.

    :raises ServiceError: NOT_FOUND for no such game, or as :func:`check_may_watch`.
    """
    identity = current_identity()
    head = await repository.refresh(check_game_id(game_id))
    await check_may_watch(repository, head, identity)
    return identity, head


def resolve_viewpoint(
    head: GameSnapshot, identity: Identity,
    request: replay_pb2.GetReplayFrameRequest | replay_pb2.ListReplayFramesRequest,
) -> Viewpoint:
    """The viewpoint ``identity`` asks for, if the match as it stands (``head``) allows it.

    :raises ServiceError: see replay.proto "Who sees what".
    """
    own = None if identity.is_privileged else head.seat_of(identity.player_id)
    asked = request.seat if request.HasField("seat") else None
    kind = request.viewpoint
    if asked is not None and kind != _SEAT:
        raise _invalid("seat: only with viewpoint REPLAY_VIEWPOINT_SEAT")
    if kind == replay_pb2.REPLAY_VIEWPOINT_UNSPECIFIED:
        return Viewpoint(_SPECTATOR) if own is None else Viewpoint(_SEAT, own)
    if kind == _SPECTATOR:
        return Viewpoint(_SPECTATOR)
    if kind == _TABLE:
        if not head.is_over:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION, Reason.GAME_NOT_OVER,
                f"game {quoted_input(head.game_id)} is not over: nobody sees it from above "
                "until it ends",
            )
        return Viewpoint(_TABLE)
    seat = asked if asked is not None else own
    if seat is None:
        raise _invalid("seat: REPLAY_VIEWPOINT_SEAT needs a seat (the caller holds none)")
    if not head.is_over and seat != own:
        raise _not_your_seat(identity, seat)
    if seat >= len(head.players):
        raise _invalid(f"seat: game {quoted_input(head.game_id)} has no seat {seat}")
    return Viewpoint(_SEAT, seat)


def frames(
    game_id: str, entries: list[log_pb2.LogEntry], first: int, last: int,
    viewpoint: Viewpoint, names: Mapping[str, SeatName] = NO_NAMES,
) -> Iterator[replay_pb2.ReplayFrame]:
    """The frames after events ``first`` to ``last`` (1 <= first <= last <= the log's last
    seq) of the log ``entries`` (from seq 1) as ``viewpoint`` sees them, the views with
    the seats' ``names``: the repository's replay up to ``first``, then one event at a
    time."""
    snapshot = snapshot_of(game_id, entries[:first])
    for seq in range(first, last + 1):
        if seq > first:
            snapshot = snapshot.advanced(entries[seq - 1:seq])
        yield _frame(snapshot, entries, viewpoint, names)


def frame_at(
    game_id: str, entries: list[log_pb2.LogEntry], seq: int, viewpoint: Viewpoint,
    names: Mapping[str, SeatName] = NO_NAMES,
) -> replay_pb2.ReplayFrame:
    """The frame after event ``seq`` (see :func:`frames`)."""
    return next(frames(game_id, entries, seq, seq, viewpoint, names))


def _frame(snapshot: GameSnapshot, entries: list[log_pb2.LogEntry], viewpoint: Viewpoint,
           names: Mapping[str, SeatName]) -> replay_pb2.ReplayFrame:
    """``snapshot`` (the log ``entries`` replayed to its seq) projected for ``viewpoint``."""
    game, state, seq = snapshot.game, snapshot.state, snapshot.seq
    entry = entries[seq - 1]
    last = entries[-1].event
    frame = replay_pb2.ReplayFrame(
        seq=seq, last_seq=last.seq, finished=game.revealed_seed(last) is not None,
        viewpoint=viewpoint.kind, hash=entry.hash, seat_control=seat_control_of(snapshot),
    )
    if viewpoint.kind == _TABLE:
        frame.event.CopyFrom(entry.event)
        seats: list[int | None] = [None, *range(len(snapshot.players))]
    else:
        frame.event.CopyFrom(game.redact(entry.event, viewpoint.seat))
        seats = [viewpoint.seat]
    if viewpoint.seat is not None:
        frame.seat = viewpoint.seat
    for seat in seats:
        view = frame.views.add()
        if seat is not None:
            view.seat = seat
        put(view, game.SCHEMA, named_view(game, state, seat, names))
    return frame


class ReplayService(replay_pb2_grpc.ReplayServiceServicer):
    """The servicer; each call: authorise the viewpoint on the match's head, read the log,
    replay it to the seq asked, project it, reply."""

    def __init__(self, repository: GameRepository, *,
                 finished_logs_cached: int = FINISHED_LOGS_CACHED) -> None:
        self.repository = repository
        self._finished: OrderedDict[str, list[log_pb2.LogEntry]] = OrderedDict()
        self._finished_cached = finished_logs_cached

    async def GetReplayFrame(
        self, request: replay_pb2.GetReplayFrameRequest, context: grpc.aio.ServicerContext
    ) -> replay_pb2.GetReplayFrameResponse:
        identity, head = await watched_head(self.repository, request.game_id)
        viewpoint = resolve_viewpoint(head, identity, request)
        seq = request.seq or head.seq
        if seq > head.seq:
            raise ServiceError(
                grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                f"seq: game {quoted_input(head.game_id)} has {head.seq} events; seq must be "
                "1 to "
                f"{head.seq} (0: the last)", metadata={"field": "seq"},
            )
        entries = await self._entries(head)
        names = await self.repository.names.of(head.game_id)
        frame = await asyncio.to_thread(frame_at, head.game_id, entries, seq, viewpoint, names)
        return replay_pb2.GetReplayFrameResponse(frame=frame)

    async def ListReplayFrames(
        self, request: replay_pb2.ListReplayFramesRequest, context: grpc.aio.ServicerContext
    ) -> replay_pb2.ListReplayFramesResponse:
        identity, head = await watched_head(self.repository, request.game_id)
        viewpoint = resolve_viewpoint(head, identity, request)
        reply = replay_pb2.ListReplayFramesResponse(last_seq=head.seq)
        if request.after_seq >= head.seq:
            return reply
        size = min(request.page_size or DEFAULT_PAGE_FRAMES, MAX_PAGE_FRAMES)
        last = min(request.after_seq + size, head.seq)
        entries = await self._entries(head)
        names = await self.repository.names.of(head.game_id)
        page = await asyncio.to_thread(
            lambda: list(frames(head.game_id, entries, request.after_seq + 1, last, viewpoint,
                                names))
        )
        reply.frames.extend(page)
        return reply

    async def _entries(self, head: GameSnapshot) -> list[log_pb2.LogEntry]:
        """The log up to ``head`` (a finished match's from the cache when there)."""
        cached = self._finished.get(head.game_id)
        if cached is not None:
            self._finished.move_to_end(head.game_id)
            return cached
        loaded = await asyncio.to_thread(self.repository.store.load, head.game_id, 0)
        # Another replica may have appended since ``head``: the frame stays at what was
        # authorised.
        entries = [entry for entry in loaded if entry.event.seq <= head.seq]
        if head.is_over:
            self._finished[head.game_id] = entries
            while len(self._finished) > self._finished_cached:
                self._finished.popitem(last=False)
        return entries
