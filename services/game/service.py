"""The gRPC ``dast.v1.GameService``: thin methods mapping requests to the pipeline.

Every method: read the caller's identity (checked by the auth interceptor), call the
repository / command pipeline / stream merge, redact for the caller's seat, reply.
Failures become rich statuses through :func:`services.platform.errors.abort_with`.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Final, NoReturn

import grpc
import structlog
from google.protobuf.message import Message

from dast.v1 import game_pb2, game_pb2_grpc, log_pb2
from engine.core.chain import chain_entries
from engine.core.errors import RuleViolation
from engine.core.fairness import SERVER_SEED_BYTES, commit
from engine.core.protocol import Game
from engine.registry import GAMES
from services.game.commands import CommandHandler, Submission
from services.game.repository import GameRepository, GameSnapshot
from services.game.streams import log_after
from services.platform.auth import Identity, Role, current_identity
from services.platform.bus import Bus, InProcessBus
from services.platform.errors import Reason, ServiceError, abort_with, status_of
from services.platform.metrics import GameMetrics
from services.platform.store import GameExists, GameNotFound, StoreError

_GAME_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_log = structlog.get_logger(component="game")


def wall_clock_ms() -> int:
    """The service clock that stamps commands (ms since the epoch)."""
    return time.time_ns() // 1_000_000


def _oneof_field(message: type[Message], oneof: str, game: Game) -> str:
    """The name of the field of ``oneof`` that carries ``game``'s messages ("hokm", "hand")."""
    names = {field.name for field in message.DESCRIPTOR.oneofs_by_name[oneof].fields}
    if game.NAME not in names:
        raise RuntimeError(f"{message.DESCRIPTOR.full_name}.{oneof} has no field {game.NAME}")
    return game.NAME


def _invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST, message)


def _check_game_id(game_id: str) -> str:
    if not _GAME_ID.fullmatch(game_id):
        raise ServiceError(
            grpc.StatusCode.NOT_FOUND, Reason.GAME_NOT_FOUND, f"no game {game_id[:64]!r}"
        )
    return game_id


def viewer_seat(snapshot: GameSnapshot, identity: Identity, requested: int | None) -> int | None:
    """The seat whose projection ``identity`` sees (None: the public, spectator one).

    Players see their own seat (or watch as spectators when not seated); services and
    admins see the seat they name, or the public projection.

    :raises ServiceError: PERMISSION_DENIED when a player asks for another seat.
    """
    if identity.is_privileged:
        if requested is not None and requested >= len(snapshot.players):
            raise _invalid(f"game {snapshot.game_id} has no seat {requested}")
        return requested
    own = snapshot.seat_of(identity.player_id)
    if requested is not None and requested != own:
        raise ServiceError(
            grpc.StatusCode.PERMISSION_DENIED, Reason.NOT_YOUR_SEAT,
            f"player {identity.player_id} may not see seat {requested}",
        )
    return own


def _known(exc: Exception, game_id: str) -> Exception:
    """``exc``, with the store's GameNotFound as the NOT_FOUND it means to clients."""
    if isinstance(exc, GameNotFound):
        return ServiceError(
            grpc.StatusCode.NOT_FOUND, Reason.GAME_NOT_FOUND, f"no game {game_id[:64]!r}"
        )
    return exc


class GameService(game_pb2_grpc.GameServiceServicer):
    """The servicer; each method is authenticate → load/decide/append → redact → reply."""

    def __init__(
        self,
        repository: GameRepository,
        bus: Bus,
        notify: Callable[[], None],
        metrics: GameMetrics,
        *,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.repository = repository
        self.bus = bus
        self.metrics = metrics
        self._notify = notify
        self._clock = clock
        self.commands = CommandHandler(
            repository, clock, notify,
            inline_bus=bus if isinstance(bus, InProcessBus) else None,
        )

    async def CreateGame(
        self, request: game_pb2.CreateGameRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.CreateGameResponse:
        try:
            identity = current_identity()
            if not identity.is_privileged:
                raise ServiceError(
                    grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                    "creating a game needs a service or admin token",
                )
            game = GAMES.get(request.game_type)
            if game is None:
                raise ServiceError(
                    grpc.StatusCode.INVALID_ARGUMENT, Reason.UNKNOWN_GAME_TYPE,
                    f"no game of type {request.game_type}",
                )
            rules_name = _oneof_field(game_pb2.CreateGameRequest, "rules", game)
            chosen = request.WhichOneof("rules")
            if chosen not in (None, rules_name):
                raise _invalid(f"{chosen} rules given for a {game.NAME} game")
            rules = getattr(request, rules_name)
            seed = request.server_seed or secrets.token_bytes(SERVER_SEED_BYTES)
            if request.server_seed:
                if identity.role is not Role.ADMIN:
                    raise ServiceError(
                        grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                        "only an admin token may choose the server seed",
                    )
                if len(seed) != SERVER_SEED_BYTES:
                    raise _invalid(f"server_seed must have {SERVER_SEED_BYTES} bytes")
            game_id = request.game_id or uuid.uuid4().hex
            if not _GAME_ID.fullmatch(game_id):
                raise _invalid("game_id: 1 to 64 letters, digits, '-' or '_'")
            events = game.start(rules, seed, list(request.players), at_ms=self._clock())
            entries = chain_entries(events)
            snapshot = await self.repository.create(
                game_id, game.GAME_TYPE, entries, relayed=self.commands.inline_bus is not None
            )
            await self.commands.published(snapshot, entries)
            self.metrics.child(self.metrics.appended, game.NAME).inc(len(entries))
            _log.info("game_created", game_id=game_id, game=game.NAME, seq=snapshot.seq)
            return game_pb2.CreateGameResponse(
                game_id=game_id, server_seed_commitment=commit(seed), seq=snapshot.seq
            )
        except GameExists:
            await abort_with(context, ServiceError(
                grpc.StatusCode.ALREADY_EXISTS, Reason.GAME_EXISTS,
                f"game {request.game_id} exists",
            ))
        except Exception as exc:
            await self._fail(context, exc, request.game_id)

    async def SubmitCommand(
        self, request: game_pb2.SubmitCommandRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.SubmitCommandResponse:
        started = time.perf_counter()
        label = request.WhichOneof("command") or "none"
        try:
            identity = current_identity()
            game_id = _check_game_id(request.game_id)
            if label == "none":
                raise _invalid("the command carries no game's body")
            if not identity.is_privileged and request.automatic:
                raise ServiceError(
                    grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                    "only services mark commands automatic",
                )
            submission = Submission(
                game_id=game_id,
                command_id=request.command_id,
                expected_seq=request.expected_seq if request.HasField("expected_seq") else None,
                body_name=label,
                body=getattr(request, label),
                seat=request.seat if request.HasField("seat") else None,
                automatic=request.automatic,
            )
            outcome = await self.commands.submit(identity, submission)
            seat = outcome.seat if not identity.is_privileged else submission.seat
            game = outcome.snapshot.game
            reply = game_pb2.SubmitCommandResponse(
                events=[game.redact(entry.event, seat) for entry in outcome.entries],
                seq=outcome.snapshot.seq,
                duplicate=outcome.duplicate,
            )
            result = "duplicate" if outcome.duplicate else "accepted"
            if not outcome.duplicate:
                self.metrics.child(self.metrics.appended, label).inc(len(outcome.entries))
            self.metrics.child(self.metrics.commands, label, result).inc()
            _log.debug("command", game_id=game_id, seq=outcome.snapshot.seq, outcome=result)
            return reply
        except Exception as exc:
            code, reason, _ = status_of(_known(exc, request.game_id))
            self.metrics.child(self.metrics.commands, label, code.name.lower()).inc()
            _log.info("command_refused", game_id=request.game_id[:64],
                      expected_seq=request.expected_seq, status=code.name, reason=reason)
            await self._fail(context, exc, request.game_id)
        finally:
            self.metrics.child(self.metrics.command_seconds, label).observe(
                time.perf_counter() - started
            )

    async def GetView(
        self, request: game_pb2.GetViewRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.GetViewResponse:
        try:
            identity = current_identity()
            snapshot = await self.repository.refresh(_check_game_id(request.game_id))
            seat = viewer_seat(
                snapshot, identity, request.seat if request.HasField("seat") else None
            )
            view = snapshot.game.view(snapshot.state, seat)
            reply = game_pb2.GetViewResponse(seq=snapshot.seq)
            getattr(reply, _oneof_field(game_pb2.GetViewResponse, "view", snapshot.game)).CopyFrom(
                view
            )
            return reply
        except Exception as exc:
            await self._fail(context, exc, request.game_id)

    async def Subscribe(
        self, request: game_pb2.SubscribeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[game_pb2.SubscribeResponse]:
        try:
            identity = current_identity()
            snapshot = await self.repository.refresh(_check_game_id(request.game_id))
            seat = viewer_seat(
                snapshot, identity, request.seat if request.HasField("seat") else None
            )
            if snapshot.is_over and request.after_seq >= snapshot.seq:
                return
            game = snapshot.game
            stream = log_after(
                self.repository.store, self.bus, game, snapshot.game_id, request.after_seq,
                on_live=self._observe_lag,
            )
            async for entry in stream:
                yield game_pb2.SubscribeResponse(event=game.redact(entry.event, seat))
        except Exception as exc:
            await self._fail(context, exc, request.game_id)

    async def ExportLog(
        self, request: game_pb2.ExportLogRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.ExportLogResponse:
        try:
            identity = current_identity()
            snapshot = await self.repository.refresh(_check_game_id(request.game_id))
            if not snapshot.is_over and identity.role is not Role.ADMIN:
                raise ServiceError(
                    grpc.StatusCode.FAILED_PRECONDITION, Reason.GAME_NOT_OVER,
                    f"game {snapshot.game_id} is not over; only admins export it now",
                )
            entries = await self._load(snapshot.game_id)
            return game_pb2.ExportLogResponse(
                game_type=snapshot.game.GAME_TYPE, entries=entries
            )
        except Exception as exc:
            await self._fail(context, exc, request.game_id)

    async def _load(self, game_id: str) -> list[log_pb2.LogEntry]:
        return await asyncio.to_thread(self.repository.store.load, game_id, 0)

    def _observe_lag(self, entry: log_pb2.LogEntry) -> None:
        if entry.event.at_ms:
            lag = max(0.0, (wall_clock_ms() - entry.event.at_ms) / 1000)
            self.metrics.relay_lag.observe(lag)

    async def _fail(
        self, context: grpc.aio.ServicerContext, exc: Exception, game_id: str
    ) -> NoReturn:
        exc = _known(exc, game_id)
        if isinstance(exc, StoreError) and not isinstance(exc, RuleViolation):
            _log.warning("store_error", game_id=game_id, error=str(exc))
        elif not isinstance(exc, ServiceError | RuleViolation):
            _log.exception("internal_error", game_id=game_id)
        await abort_with(context, exc)
