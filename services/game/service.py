"""The gRPC ``dast.v1.GameService``: thin methods mapping requests to the pipeline.

Every method: read the caller's identity (checked by the auth interceptor), call the
repository / command pipeline / stream merge, redact for the caller's seat, reply.
Failures become rich statuses in one place: each method is wrapped by :func:`_rpc` (or
:func:`_streaming_rpc`), which ends the call through
:func:`services.platform.errors.abort_with` with the request's game id in the error logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import secrets
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Iterable
from typing import Any, Final, NoReturn, TypeVar

import grpc
import structlog
from google.protobuf.message import Message

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, log_pb2
from engine.core.chain import chain_log
from engine.core.errors import RuleViolation
from engine.core.fairness import SERVER_SEED_BYTES, commit
from engine.core.payload import put, take
from engine.registry import GAMES
from services.game.commands import CommandHandler, Outcome, Submission
from services.game.control import SeatControls, seat_control_of
from services.game.names import log_players
from services.game.play import (
    HEARTBEAT_SECONDS,
    QUEUE_LIMIT,
    EndedWith,
    PlayStats,
    PlayStream,
    Sent,
)
from services.game.repository import GameRepository, GameSnapshot
from services.game.status import ServiceCounts
from services.game.streams import SEAT_TO_ACT, Encoded, Envelope, GameFeeds
from services.game.turns import fill_turn, named_view, next_to_act, turn_for
from services.platform.auth import Identity, Role, current_identity
from services.platform.background import BackgroundTasks
from services.platform.bans import Ban
from services.platform.bus import Bus, InProcessBus
from services.platform.clock import wall_clock_ms
from services.platform.errors import Reason, ServiceError, abort_with, status_of
from services.platform.keys import LogSigner
from services.platform.limits import admit_spectator
from services.platform.metrics import GameMetrics
from services.platform.presence_kv import StreamPresence
from services.platform.store import GameExists, GameNotFound
from services.platform.stream_caller import current_stream_caller
from services.platform.validation import clean_display_name, quoted_input

_GAME_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_log = structlog.get_logger(component="game")


def _invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST, message)


def check_game_id(game_id: str) -> str:
    """``game_id`` if some game could have it; NOT_FOUND otherwise, before any store lookup.

    The server's request guard has already refused ids with control or format characters
    (:mod:`services.platform.validation`); the message does not echo an impossible id.
    """
    if not _GAME_ID.fullmatch(game_id):
        raise ServiceError(
            grpc.StatusCode.NOT_FOUND, Reason.GAME_NOT_FOUND,
            "no game has that id (game ids are 1 to 64 letters, digits, '-' or '_')",
        )
    return game_id


def seated_players(players: Iterable[common_pb2.Player]) -> list[common_pb2.Player]:
    """The players of a new game as its views will name them: each display name cleaned by
    the rules of every name others see (:func:`~services.platform.validation.clean_display_name`:
    no control, bidi, zero-width or escape character), whoever creates the game.

    :raises ServiceError: INVALID_ARGUMENT, reason ``invalid_display_name``, naming the
        player's field (``players[2].display_name``).
    """
    seated = []
    for index, player in enumerate(players):
        cleaned = common_pb2.Player()
        cleaned.CopyFrom(player)
        cleaned.display_name = clean_display_name(
            player.display_name, field=f"players[{index}].display_name")
        seated.append(cleaned)
    return seated


def viewer_seat(snapshot: GameSnapshot, identity: Identity, requested: int | None) -> int | None:
    """The seat whose projection ``identity`` sees (None: the public, spectator one).

    Players see their own seat (or watch as spectators when not seated); services and
    admins see the seat they name, or the public projection.

    :raises ServiceError: PERMISSION_DENIED when a player asks for another seat.
    """
    if identity.is_privileged:
        if requested is not None and requested >= len(snapshot.players):
            raise _invalid(f"game {quoted_input(snapshot.game_id)} has no seat {requested}")
        return requested
    own = snapshot.seat_of(identity.player_id)
    if requested is not None and requested != own:
        raise ServiceError(
            grpc.StatusCode.PERMISSION_DENIED, Reason.NOT_YOUR_SEAT,
            f"player {quoted_input(identity.player_id)} may not see seat {requested}",
        )
    return own


def _known(exc: Exception, game_id: str) -> Exception:
    """``exc``, with the store's GameNotFound as the NOT_FOUND it means to clients."""
    if isinstance(exc, GameNotFound):
        return ServiceError(
            grpc.StatusCode.NOT_FOUND, Reason.GAME_NOT_FOUND, f"no game {quoted_input(game_id)}"
        )
    return exc


_Request = TypeVar("_Request", bound=Message)
_Reply = TypeVar("_Reply", bound=Message)
_UnaryMethod = Callable[
    ["GameService", _Request, grpc.aio.ServicerContext], Coroutine[Any, Any, _Reply]
]
_Sent = TypeVar("_Sent", bound=Message | bytes)
"""A streamed response: a message, or one serialised already (shared between streams)."""
_StreamingMethod = Callable[
    ["GameService", _Request, grpc.aio.ServicerContext], AsyncGenerator[_Sent, None]
]
_RefusalHook = Callable[["GameService", _Request, grpc.StatusCode, str], None]
"""Told of each refused call of one method: (service, request, status code, reason)."""


def _game_id_of(request: Message) -> str:
    """The game id a request names, as clients sent it ("" for requests naming no game)."""
    game_id = getattr(request, "game_id", "")
    return game_id if isinstance(game_id, str) else ""


async def _end_with_failure(
    service: GameService, request: _Request, context: grpc.aio.ServicerContext,
    exc: Exception, on_refusal: _RefusalHook[_Request] | None = None,
) -> NoReturn:
    """End the call with ``exc``'s status (services.platform.errors maps it; anything
    unexpected, a store failure included, is logged with the request's game id and answered
    INTERNAL with a correlation id), after telling ``on_refusal`` the status."""
    game_id = _game_id_of(request)
    failure = _known(exc, game_id)
    if on_refusal is not None:
        code, reason, _ = status_of(failure)
        on_refusal(service, request, code, reason)
    await abort_with(context, failure, game_id=game_id[:64])


def _answering_failures(
    method: _UnaryMethod[_Request, _Reply], on_refusal: _RefusalHook[_Request] | None
) -> _UnaryMethod[_Request, _Reply]:
    """``method``, its every failure ending the call (:func:`_end_with_failure`)."""

    @functools.wraps(method)
    async def answered(
        service: GameService, request: _Request, context: grpc.aio.ServicerContext
    ) -> _Reply:
        try:
            return await method(service, request, context)
        except Exception as exc:
            await _end_with_failure(service, request, context, exc, on_refusal)

    return answered


def _rpc(method: _UnaryMethod[_Request, _Reply]) -> _UnaryMethod[_Request, _Reply]:
    """A unary servicer method whose failures end the call with their rich status."""
    return _answering_failures(method, None)


def _rpc_reporting_refusals(
    on_refusal: _RefusalHook[_Request],
) -> Callable[[_UnaryMethod[_Request, _Reply]], _UnaryMethod[_Request, _Reply]]:
    """:func:`_rpc`, telling ``on_refusal`` of each refusal before the call ends."""

    def decorate(method: _UnaryMethod[_Request, _Reply]) -> _UnaryMethod[_Request, _Reply]:
        return _answering_failures(method, on_refusal)

    return decorate


def _streaming_rpc(
    method: _StreamingMethod[_Request, _Sent],
) -> _StreamingMethod[_Request, _Sent]:
    """A server-streaming servicer method (an async generator) whose failures, before or
    between responses, end the stream with their rich status."""

    @functools.wraps(method)
    async def answered(
        service: GameService, request: _Request, context: grpc.aio.ServicerContext
    ) -> AsyncGenerator[_Sent, None]:
        try:
            # aclosing: a stream closed early (the client went away) closes the method's
            # generator now, so its own ``finally`` blocks run at once, not when collected.
            async with contextlib.aclosing(method(service, request, context)) as responses:
                async for response in responses:
                    yield response
        except Exception as exc:
            await _end_with_failure(service, request, context, exc)

    return answered


def submission_of(
    game_id: str, request: game_pb2.SubmitCommandRequest | game_pb2.PlayCommand,
    seat: int | None,
) -> Submission:
    """The command a SubmitCommand call or a Play stream's command carries, for ``seat``.

    :raises ServiceError: NOT_FOUND for an impossible game id, INVALID_ARGUMENT for a
        command without a game's body.
    """
    game_id = check_game_id(game_id)
    label = request.WhichOneof("command")
    if label is None:
        raise _invalid("the command carries no game's body")
    return Submission(
        game_id=game_id,
        command_id=request.command_id,
        expected_seq=request.expected_seq if request.HasField("expected_seq") else None,
        body_name=label,
        body=getattr(request, label),
        seat=seat,
        automatic=request.automatic,
    )


def check_seat_to_act_views(identity: Identity, requested_seat: int | None) -> None:
    """Refuse ``PlayOpen.seat_to_act_views`` to a player, or on a stream of one seat.

    :raises ServiceError: PERMISSION_DENIED for a player's token, INVALID_ARGUMENT with a
        seat.
    """
    if not identity.is_privileged:
        raise ServiceError(
            grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
            "only service and admin tokens receive the views of the seat to act: a player "
            "receives their own seat's view",
        )
    if requested_seat is not None:
        raise _invalid("seat_to_act_views is for a stream without a seat (one seat's stream "
                       "carries that seat's view)")


def _command_label(request: game_pb2.SubmitCommandRequest) -> str:
    """The command's body name, the label of its metrics ("none" for an empty command)."""
    return request.WhichOneof("command") or "none"


def _count_refused_command(
    service: GameService, request: game_pb2.SubmitCommandRequest,
    code: grpc.StatusCode, reason: str,
) -> None:
    """Count and log a refused command (its duration is observed by the method itself)."""
    count_refusal(service, _command_label(request), request.game_id, request.expected_seq,
                  code, reason)


def count_refusal(
    service: GameService, label: str, game_id: str, expected_seq: int,
    code: grpc.StatusCode, reason: str,
) -> None:
    """Count and log a refused command, whichever way it came (a call, a Play stream)."""
    metrics = service.metrics
    metrics.child(metrics.commands, label, code.name.lower()).inc()
    service.counts.refusal(code)
    _log.info("command_refused", game_id=game_id[:64],
              expected_seq=expected_seq, status=code.name, reason=reason)


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
        signer: LogSigner | None = None,
        presence: StreamPresence | None = None,
    ) -> None:
        self.repository = repository
        self.presence = presence
        """Told when a seated player's stream opens and closes (None: nobody listens)."""
        self.signer = signer or LogSigner.generate()
        """Seals finished logs; a server passes its configured key
        (:func:`services.platform.keys.load_signer`), tests get a key of their own."""
        self.bus = bus
        self.feeds = GameFeeds(repository.store, bus, on_live=self._observe_lag, clock=clock,
                               names=repository.names.known)
        """The live feeds of this process's Subscribe streams, one per game."""
        self.metrics = metrics
        self._notify = notify
        self._clock = clock
        self.commands = CommandHandler(
            repository, clock, notify,
            inline_bus=bus if isinstance(bus, InProcessBus) else None,
            on_committed=self.feeds.committed,
        )
        self.seat_controls = SeatControls(self.commands)
        self.play_queue_limit = QUEUE_LIMIT
        """Messages a Play stream queues for a client not reading (services.game.play)."""
        self.heartbeat_seconds = HEARTBEAT_SECONDS
        """How often an idle Play stream sends a heartbeat."""
        self.play_streams = PlayStats()
        self.counts = ServiceCounts(started_at_ms=self._clock())
        """What this replica has done (``GetServerStatus``)."""
        self._erasures = BackgroundTasks()

    def on_ban(self, player_id: str, ban: Ban | None) -> None:
        """A :data:`~services.platform.bans.BanListener`: a deleted account's names are
        blanked in every game's seat names, in the background (every replica does it; the
        second time changes nothing). The signed logs never held them."""
        if ban is None or not ban.erased:
            return
        self._erasures.spawn(self._erase_names(player_id), name=f"game-erase:{player_id}")

    async def _erase_names(self, player_id: str) -> None:
        try:
            seats = await self.repository.names.erase(player_id)
        except Exception:
            _log.exception("names_not_erased", player_id=player_id)
        else:
            _log.info("names_erased", player_id=player_id, seats=seats)

    @_rpc
    async def CreateGame(
        self, request: game_pb2.CreateGameRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.CreateGameResponse:
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
        try:
            rules = take(request, "rules", game.SCHEMA, game.SCHEMA.rules)
        except RuleViolation as wrong:
            raise _invalid(f"no rules of a {game.NAME} game: {wrong.message}") from wrong
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
        # The log names each player by its opaque id only; the names are kept beside it
        # (services.game.names), so that an erased account's name can go.
        players, seat_names = log_players(seated_players(request.players))
        events = game.start(
            rules, seed, players, at_ms=self._clock(),
            server_seed_chosen=bool(request.server_seed),
        )
        entries = chain_log(events)
        try:
            snapshot = await self.repository.create(
                game_id, game.GAME_TYPE, entries, relayed=self.commands.inline_bus is not None,
                # unset: allowed, as for every caller that predates the field
                spectators_allowed=(request.spectators_allowed
                                    if request.HasField("spectators_allowed") else True),
                seat_names=seat_names,
            )
        except GameExists:
            # The id as the caller sent it, not the store's wording.
            raise ServiceError(
                grpc.StatusCode.ALREADY_EXISTS, Reason.GAME_EXISTS,
                f"game {quoted_input(request.game_id)} exists",
            ) from None
        await self.commands.published(snapshot, entries)
        self.metrics.child(self.metrics.appended, game.NAME).inc(len(entries))
        _log.info("game_created", game_id=game_id, game=game.NAME, seq=snapshot.seq)
        return game_pb2.CreateGameResponse(
            game_id=game_id, server_seed_commitment=commit(seed), seq=snapshot.seq,
            server_time_ms=self._clock(),
        )

    @_rpc_reporting_refusals(_count_refused_command)
    async def SubmitCommand(
        self, request: game_pb2.SubmitCommandRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.SubmitCommandResponse:
        identity = current_identity()
        submission = submission_of(request.game_id, request,
                                   request.seat if request.HasField("seat") else None)
        outcome = await self.apply(identity, submission)
        seat = outcome.seat if not identity.is_privileged else submission.seat
        game = outcome.snapshot.game
        reply = game_pb2.SubmitCommandResponse(
            events=[game.redact(entry.event, seat) for entry in outcome.entries],
            seq=outcome.snapshot.seq,
            duplicate=outcome.duplicate,
            hashes=[entry.hash for entry in outcome.entries],
            server_time_ms=self._clock(),
        )
        state = outcome.snapshot.state
        seats = next_to_act(game, state)
        if identity.is_privileged:
            # Bots and timers read views by GetView when they need one: a view costs
            # more than deciding the command, so their replies say whose turn it is only.
            reply.turn.CopyFrom(turn_for(seats, seat))
        else:
            fill_turn(reply, game, state, seat, seats, always_view=True,
                      names=await self.repository.names.of(submission.game_id))
        return reply

    async def apply(self, identity: Identity, submission: Submission) -> Outcome:
        """Apply one command of ``identity``'s, whether a SubmitCommand call or a Play
        stream carries it: the same checks, pipeline and metrics, so the same outcome.
        Refusals are raised (their counting is the caller's: :func:`count_refusal`)."""
        started = time.perf_counter()
        label = submission.body_name
        try:
            if not identity.is_privileged and submission.automatic:
                raise ServiceError(
                    grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                    "only services mark commands automatic",
                )
            outcome = await self.commands.submit(identity, submission)
            result = "duplicate" if outcome.duplicate else "accepted"
            if not outcome.duplicate:
                self.metrics.child(self.metrics.appended, label).inc(len(outcome.entries))
                self.counts.events_appended += len(outcome.entries)
            self.metrics.child(self.metrics.commands, label, result).inc()
            self.counts.commands_accepted += 1
            _log.debug("command", game_id=submission.game_id, seq=outcome.snapshot.seq,
                       outcome=result)
            return outcome
        finally:
            self.metrics.child(self.metrics.command_seconds, label).observe(
                time.perf_counter() - started
            )

    @_rpc
    async def GetView(
        self, request: game_pb2.GetViewRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.GetViewResponse:
        identity = current_identity()
        snapshot = await self.repository.refresh(check_game_id(request.game_id))
        seat = viewer_seat(
            snapshot, identity, request.seat if request.HasField("seat") else None
        )
        await self._check_spectator(identity, snapshot.game_id, seat)
        view = named_view(snapshot.game, snapshot.state, seat,
                          await self.repository.names.of(snapshot.game_id))
        reply = game_pb2.GetViewResponse(
            seq=snapshot.seq, server_time_ms=self._clock(),
            turn=turn_for(next_to_act(snapshot.game, snapshot.state), seat),
        )
        put(reply, snapshot.game.SCHEMA, view)
        reply.seat_control.extend(seat_control_of(snapshot))
        return reply

    @_streaming_rpc
    async def Subscribe(  # type: ignore[override]  # bytes: responses serialised already
        self, request: game_pb2.SubscribeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncGenerator[bytes, None]:
        # Serialised SubscribeResponses, shared by the streams of one projection (the
        # server's serializer passes them through: services.platform.server).
        async for response in self.watch(
            current_identity(), request.game_id, request.after_seq,
            request.seat if request.HasField("seat") else None,
        ):
            yield response.data

    async def watch(
        self, identity: Identity, game_id: str, after_seq: int, requested_seat: int | None,
        envelope: Envelope | None = None, *, seat_to_act_views: bool = False,
    ) -> AsyncGenerator[Encoded, None]:
        """The responses of a stream of ``identity``'s from ``after_seq`` on, as Subscribe
        sends them (a Play stream its events, each in ``envelope``), serialised, ending after
        the match's final event; ``seat_to_act_views`` (a service's stream without a seat):
        the public events, each telling a turn with the view of the seat to act."""
        game_id = check_game_id(game_id)
        if seat_to_act_views:
            check_seat_to_act_views(identity, requested_seat)
        # Who watches, and as whom, from the cached state (a match's seats are fixed when it
        # is created), so that a spectator over the match's cap costs no store read.
        seat = viewer_seat(await self.repository.get(game_id), identity, requested_seat)
        await self._check_spectator(identity, game_id, seat)
        if seat is None and not seat_to_act_views:
            # a spectator's stream: the match's and the process's share of them
            admit_spectator(f"game:{game_id}")
        snapshot = await self.repository.refresh(game_id)
        if snapshot.is_over and after_seq >= snapshot.seq:
            return
        await self.repository.names.of(game_id)  # held for the stream's views (feeds.names)
        # A seated player's stream: presence counts it, and it gives the seat back if a
        # bot stood in (services.game.control).
        seated_player = not identity.is_privileged and seat is not None
        if seated_player:
            await self.seat_controls.on_stream_opened(identity, snapshot, seat)
            if self.presence is not None:
                self.presence.opened(snapshot.game_id, identity.player_id)
        self.metrics.open_streams.inc()
        # A Play stream's events come through here too; it is counted as a Play stream.
        counted = envelope is None
        if counted:
            self.counts.open_subscriptions += 1
        try:
            # Streams of one game share its feed, and those of one projection its
            # responses (each redacted and serialised once): see services.game.streams.
            async for response in self.feeds.encoded_after(
                snapshot.game, snapshot.game_id, after_seq,
                SEAT_TO_ACT if seat_to_act_views else seat, envelope=envelope,
                head_seq=snapshot.seq, head_state=snapshot.state,
            ):
                yield response
        finally:
            self.metrics.open_streams.dec()
            if counted:
                self.counts.open_subscriptions -= 1
            if seated_player and self.presence is not None:
                self.presence.closed(snapshot.game_id, identity.player_id)

    async def Play(  # type: ignore[override]  # events come serialised already
        self, requests: AsyncIterator[game_pb2.PlayRequest], context: grpc.aio.ServicerContext
    ) -> AsyncGenerator[Sent, None]:
        game_id = ""
        try:
            opening = await anext(requests, None)
            if opening is None or opening.WhichOneof("kind") != "open":
                raise _invalid("a Play stream opens with a PlayOpen message (the game, and "
                               "the seq to resume after)")
            game_id = opening.open.game_id
            stream = PlayStream(
                self, current_stream_caller(), context, opening.open,
                queue_limit=self.play_queue_limit, heartbeat_seconds=self.heartbeat_seconds,
                clock=self._clock,
            )
            self.counts.open_play_streams += 1
            try:
                async with contextlib.aclosing(stream.messages(requests)) as messages:
                    async for message in messages:
                        yield message
            finally:
                self.counts.open_play_streams -= 1
        except grpc.aio.AbortError:
            raise  # ended already (a backlog the sender could not report)
        except EndedWith as ended:
            await context.abort_with_status(ended.status)
        except Exception as exc:
            # Logged with the game the stream opened, if it got so far.
            await _end_with_failure(self, game_pb2.PlayOpen(game_id=game_id), context, exc)

    def submission_of(
        self, game_id: str, request: game_pb2.SubmitCommandRequest | game_pb2.PlayCommand,
        seat: int | None,
    ) -> Submission:
        """:func:`submission_of` (for the Play stream, which holds the service only)."""
        return submission_of(game_id, request, seat)

    def count_refusal(self, label: str, game_id: str, expected_seq: int,
                      code: grpc.StatusCode, reason: str) -> None:
        """:func:`count_refusal` of this service."""
        count_refusal(self, label, game_id, expected_seq, code, reason)

    @_rpc
    async def ControlSeat(
        self, request: game_pb2.ControlSeatRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.ControlSeatResponse:
        identity = current_identity()
        self.seat_controls.check_caller(identity)
        snapshot = await self.repository.refresh(check_game_id(request.game_id))
        outcome = await self.seat_controls.control(identity, snapshot, request)
        reply = game_pb2.ControlSeatResponse(
            seq=outcome.snapshot.seq, changed=bool(outcome.entries) and not outcome.duplicate,
            server_time_ms=self._clock(),
        )
        if outcome.entries:
            reply.event.CopyFrom(outcome.entries[0].event)
            reply.hash = outcome.entries[0].hash
        if reply.changed:
            _log.info("seat_control", game_id=snapshot.game_id, seat=request.seat,
                      bot=request.bot, reason=request.reason, seq=outcome.snapshot.seq,
                      requested_by=f"{identity.role}:{identity.player_id}")
        return reply

    @_rpc
    async def ExportLog(
        self, request: game_pb2.ExportLogRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.ExportLogResponse:
        identity = current_identity()
        snapshot = await self.repository.refresh(check_game_id(request.game_id))
        # The whole log shows every hand: a player outside a private match may not take it,
        # as they may not watch or replay it.
        await self._check_spectator(identity, snapshot.game_id,
                                    viewer_seat(snapshot, identity, None))
        if not snapshot.is_over and not identity.reads_every_log:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION, Reason.GAME_NOT_OVER,
                f"game {quoted_input(snapshot.game_id)} is not over; only admins and referees "
                "export it now",
            )
        entries = await self._load(snapshot.game_id)
        reply = game_pb2.ExportLogResponse(game_type=snapshot.game.GAME_TYPE, entries=entries)
        if snapshot.is_over and entries:
            head = entries[-1]
            reply.seal.CopyFrom(
                self.signer.seal(snapshot.game_id, head.event.seq, head.hash)
            )
        return reply

    @_rpc
    async def GetServerStatus(
        self, request: game_pb2.GetServerStatusRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.GetServerStatusResponse:
        if current_identity().role is not Role.ADMIN:
            raise ServiceError(
                grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                "a replica's status is for operators: it needs an admin token",
            )
        return self.counts.status()

    @_rpc
    async def GetSigningKey(
        self, request: game_pb2.GetSigningKeyRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.GetSigningKeyResponse:
        current_identity()
        return game_pb2.GetSigningKeyResponse(
            public_key=self.signer.public_key, algorithm="ed25519"
        )

    async def _check_spectator(self, identity: Identity, game_id: str, seat: int | None) -> None:
        """Refuse a player who holds no seat in a match that admits no spectators (the
        setting it was created with, :meth:`GameRepository.spectators_allowed`)."""
        if identity.is_privileged or identity.reads_every_log or seat is not None:
            return
        if not await self.repository.spectators_allowed(game_id):
            raise ServiceError(
                grpc.StatusCode.PERMISSION_DENIED, Reason.SPECTATORS_NOT_ALLOWED,
                f"the table of game {quoted_input(game_id)} allows no spectators",
            )

    async def _load(self, game_id: str) -> list[log_pb2.LogEntry]:
        return await asyncio.to_thread(self.repository.store.load, game_id, 0)

    def _observe_lag(self, entry: log_pb2.LogEntry) -> None:
        if entry.event.at_ms:
            lag = max(0.0, (wall_clock_ms() - entry.event.at_ms) / 1000)
            self.metrics.relay_lag.observe(lag)
