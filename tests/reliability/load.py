"""The load the reliability suite puts on the system while it breaks it.

- **Bot matches** of every variant of both games, created through the game service with
  bots in every seat; the bot replicas play them.
- **A person's match**: a guest of the lobby at a table filled with bots, playing its own
  turns, with its game stream held on one game replica (so that pausing that replica past
  the presence grace period hands the seat to a bot, and the log shows it).
- **A person on a Play stream** (:mod:`tests.reliability.play_person`): another such guest,
  playing its turns over one ``GameService.Play`` stream on the balanced game address,
  resuming it from the last seq and resending the commands without an outcome.
- **Idle streams**: watchers (spectators with tokens of their own) following the matches;
  each resumes after a drop from the last seq it saw, and keeps every (seq, hash) it was
  sent, so the suite can check that no watcher saw a gap, a duplicate or a hash the log
  does not hold.

Every failed call is counted by status: a transient one (the process it reached was
killed, paused, or cut off from its database) is retried; the suite reports the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import grpc

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hand_pb2, hokm_pb2
from services.bot.policies import SeatView, decide
from services.platform.auth import Role
from services.platform.token_keys import TokenKeys
from tests.support.tokens import mint_with

T = TypeVar("T")
TRANSIENT: Final = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                              grpc.StatusCode.CANCELLED})
"""What a call may meet while the process it reached is killed or paused: retried."""
CALL_SECONDS: Final = 5.0
LOST_RACE: Final = frozenset({grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION,
                              grpc.StatusCode.PERMISSION_DENIED})
"""A person's move refused because something happened first (the seq moved on, a bot took
the seat while their replica was paused): documented, and answered by looking again."""
ALREADY_CREATED: Final = frozenset({grpc.StatusCode.ALREADY_EXISTS})
"""A retried CreateGame whose first attempt was stored: the match exists, as intended."""


@dataclass(frozen=True)
class Variant:
    name: str
    game_type: common_pb2.GameType.ValueType
    seats: int
    rules: Callable[[], tuple[str, Any]]
    """The ``CreateGameRequest.rules`` oneof field and its message."""


VARIANTS: Final = (
    Variant("hokm-4p", common_pb2.GAME_TYPE_HOKM, 4,
            lambda: ("hokm", hokm_pb2.HokmRules(target_score=2))),
    Variant("hand-4p-partners", common_pb2.GAME_TYPE_HAND, 4,
            lambda: ("hand", hand_pb2.HandRules(players=4, partnerships=True, rounds=1))),
    Variant("hokm-3p", common_pb2.GAME_TYPE_HOKM, 3,
            lambda: ("hokm", hokm_pb2.HokmRules(
                variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=2))),
    Variant("hand-2p", common_pb2.GAME_TYPE_HAND, 2,
            lambda: ("hand", hand_pb2.HandRules(players=2, rounds=1))),
    Variant("hokm-2p", common_pb2.GAME_TYPE_HOKM, 2,
            lambda: ("hokm", hokm_pb2.HokmRules(
                variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=2))),
    Variant("hand-3p", common_pb2.GAME_TYPE_HAND, 3,
            lambda: ("hand", hand_pb2.HandRules(players=3, rounds=1))),
    Variant("hand-4p", common_pb2.GAME_TYPE_HAND, 4,
            lambda: ("hand", hand_pb2.HandRules(players=4, rounds=1))),
)


@dataclass
class CallTally:
    """Every failed call of the load, by status; the transient ones were retried."""

    failures: Counter[str] = field(default_factory=Counter)
    handled: Counter[str] = field(default_factory=Counter)
    """Documented refusals the client expects and acts on (a lost race: reload, decide
    again), by status: not failures."""

    def record(self, error: grpc.aio.AioRpcError,
               handled: frozenset[grpc.StatusCode] = frozenset()) -> None:
        if error.code() in handled:
            self.handled[error.code().name] += 1
        else:
            self.failures[error.code().name] += 1

    @property
    def unexpected(self) -> dict[str, int]:
        """Failures that no fault explains (anything but the transient statuses)."""
        transient = {code.name for code in TRANSIENT}
        return {code: count for code, count in self.failures.items() if code not in transient}


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def retrying(tally: CallTally, call: Callable[[], Awaitable[T]], *,
                   seconds: float = 120,
                   handled: frozenset[grpc.StatusCode] = frozenset()) -> T:
    """``call()``, again (with a short backoff) while it fails with a transient status;
    ``handled``: refusals the caller expects and acts on (raised, counted apart)."""
    deadline = time.monotonic() + seconds
    pause = 0.05
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            tally.record(error, handled)
            if error.code() not in TRANSIENT or time.monotonic() > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)


@dataclass
class Watcher:
    """A spectator's stream of one match, resumed from the last seq after every drop."""

    game_id: str
    token: str
    received: list[tuple[int, bytes]] = field(default_factory=list)
    reconnections: int = 0

    @property
    def last_seq(self) -> int:
        return self.received[-1][0] if self.received else 0

    async def follow(self, game: game_pb2_grpc.GameServiceStub, tally: CallTally) -> None:
        """Follow until cancelled."""
        while True:
            call = game.Subscribe(game_pb2.SubscribeRequest(
                game_id=self.game_id, after_seq=self.last_seq), metadata=bearer(self.token))
            try:
                async for reply in call:
                    self.received.append((reply.event.seq, bytes(reply.hash)))
                return  # the server ended the stream: the match is over
            except grpc.aio.AioRpcError as error:
                tally.record(error)
                if error.code() not in TRANSIENT:
                    raise
            finally:
                call.cancel()
            self.reconnections += 1
            await asyncio.sleep(0.2)

    def problems(self) -> list[str]:
        """Gaps and duplicates in what this watcher was sent (seqs must run 1, 2, 3...)."""
        for index, (seq, _) in enumerate(self.received):
            if seq != index + 1:
                around = [seen for seen, _ in self.received[max(0, index - 2):index + 3]]
                return [f"a watcher of {self.game_id} was sent seq {seq} where {index + 1} "
                        f"was due (around it: {around})"]
        return []


@dataclass
class Load:
    """Matches and streams of one run, and what their clients met."""

    game: game_pb2_grpc.GameServiceStub
    keys: TokenKeys
    """What its tokens are signed with."""
    run_tag: str
    tally: CallTally = field(default_factory=CallTally)
    matches: dict[str, Variant] = field(default_factory=dict)
    watchers: list[Watcher] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def service_metadata(self) -> tuple[tuple[str, str], ...]:
        return bearer(mint_with(self.keys, "reliability-load", Role.SERVICE))

    async def create_match(self, index: int) -> str:
        """Start bot match number ``index`` (the variants in turn); its game id."""
        variant = VARIANTS[index % len(VARIANTS)]
        game_id = f"{self.run_tag}-{variant.name}-{index}"
        request = game_pb2.CreateGameRequest(
            game_type=variant.game_type, game_id=game_id,
            players=[common_pb2.Player(player_id=f"bot:basic:{seat}",
                                       display_name=f"Bot {seat}", is_bot=True)
                     for seat in range(variant.seats)])
        oneof, rules = variant.rules()
        getattr(request, oneof).CopyFrom(rules)
        try:
            await retrying(self.tally, lambda: self.game.CreateGame(
                request, metadata=self.service_metadata, timeout=CALL_SECONDS),
                handled=ALREADY_CREATED)
        except grpc.aio.AioRpcError as error:
            # A retry of a call whose first attempt was stored, but whose reply was lost (its
            # process died, or the deadline passed while the machine was busy).
            if error.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise
        self.matches[game_id] = variant
        return game_id

    async def sustain(self, concurrent: int, watchers_per_match: int,
                      stop: asyncio.Event) -> None:
        """Keep ``concurrent`` bot matches in play, each followed by its watchers, starting
        a new one whenever one ends, until ``stop`` is set."""
        created = 0
        playing: set[str] = set()
        while not stop.is_set():
            while len(playing) < concurrent:
                game_id = await self.create_match(created)
                created += 1
                playing.add(game_id)
                for _ in range(watchers_per_match):
                    self._follow(game_id)
            in_play = sorted(playing)
            views = await asyncio.gather(*(self.view(game_id) for game_id in in_play))
            playing -= {game_id for game_id, view in zip(in_play, views, strict=True)
                        if view.is_over}
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)

    def _follow(self, game_id: str) -> None:
        watcher = Watcher(game_id, mint_with(
            self.keys, f"watcher-{self.run_tag}-{len(self.watchers)}"))
        self.watchers.append(watcher)
        self._tasks.append(asyncio.create_task(watcher.follow(self.game, self.tally)))

    async def view(self, game_id: str) -> SeatView:
        reply = await retrying(self.tally, lambda: self.game.GetView(
            game_pb2.GetViewRequest(game_id=game_id), metadata=self.service_metadata,
            timeout=CALL_SECONDS))
        return SeatView.of(reply)

    async def unfinished(self) -> list[str]:
        views = await asyncio.gather(*(self.view(game_id) for game_id in self.matches))
        return [game_id for game_id, view in zip(self.matches, views, strict=True)
                if not view.is_over]

    async def watchers_done(self, seconds: float) -> None:
        """Wait (at most ``seconds``) for every watcher to reach its match's end."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=seconds)

    async def stop_watching(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await task
        self._tasks.clear()


@dataclass
class Person:
    """A guest who plays its own turns, its game stream held on one replica."""

    game: game_pb2_grpc.GameServiceStub
    stream_game: game_pb2_grpc.GameServiceStub
    token: str
    player_id: str
    game_id: str
    tally: CallTally
    moves: int = 0

    async def hold_stream(self) -> None:
        """Keep a Subscribe stream open (presence); reopen it whenever it drops."""
        while True:
            call = self.stream_game.Subscribe(game_pb2.SubscribeRequest(
                game_id=self.game_id), metadata=bearer(self.token))
            with contextlib.suppress(grpc.aio.AioRpcError):
                async for _ in call:
                    pass
            call.cancel()
            await asyncio.sleep(0.2)

    async def play_to_the_end(self) -> None:
        """Play this seat's turns (basic policy) until the match is over."""
        while True:
            reply = await retrying(self.tally, lambda: self.game.GetView(
                game_pb2.GetViewRequest(game_id=self.game_id), metadata=bearer(self.token),
                timeout=CALL_SECONDS))
            seat_view = SeatView.of(reply)
            if seat_view.is_over:
                return
            if seat_view.turn != seat_view.view.seat or not seat_view.view.legal:
                await asyncio.sleep(0.05)
                continue
            request = game_pb2.SubmitCommandRequest(
                game_id=self.game_id, command_id=f"{self.player_id}:{seat_view.seq}",
                expected_seq=seat_view.seq)
            getattr(request, seat_view.game).CopyFrom(decide(seat_view, "basic", self.game_id))
            try:
                await retrying(self.tally, lambda r=request: self.game.SubmitCommand(  # type: ignore[misc]
                    r, metadata=bearer(self.token), timeout=CALL_SECONDS), handled=LOST_RACE)
                self.moves += 1
            except grpc.aio.AioRpcError as error:
                if error.code() not in LOST_RACE:
                    raise  # look again after a lost race; anything else is a failure
