"""What moves tournaments along between calls: tables, results and the rounds' time limits.

:class:`Conductor` is the background work of a tournament replica. Everything it does
follows from a tournament's log and the games' events, never from memory another replica
lacks:

- **Tables.** When a step starts a round (``RoundStarted``), each of its tables becomes a
  match of the game service (:func:`services.tournament.options.create_game_request`; the
  game id names the table, so creating it again is harmless). Seats of players the log
  marks away or withdrawn get a bot standing in (``ControlSeat``), the rest of the bots
  play by the bot service.
- **Attendance.** The players of every match created are expected on the shared presence
  board (:class:`~services.tournament.attendance.Attendance`): one who opens no stream on
  it within the presence grace period is absent, and the takeover sweeper seats a bot for
  them until they come (docs/tournaments.md "Absent players").
- **Results.** The games' events arrive on a durable consumer shared by the replicas
  (``<prefix>tournaments``); the final event of a tournament's match (the index of matches
  in the store says which) makes the replica read the match's log and report the result
  (:class:`engine.tournament.ReportResult`). The last result of a round also seats the
  next round, in the same step.
- **Time limits.** A round's deadline is in its ``RoundStarted`` event (and the store's head
  row); when it passes, every match of the round still running is reported ``timed_out``
  with its score so far, and the engine rules on it.
- **Sweeps.** On start and every ``sweep_seconds``, every running tournament's current
  round is checked: tables whose match is missing are created and deadlines are (re)armed;
  on start and every ``results_every`` sweeps, matches that ended while no consumer saw it
  (a replica killed between taking the event and recording the result, or an in-process
  bus that lost its queue in a restart) are reported. So a replica killed at any line
  delays a tournament by at most ``results_every`` sweeps. Every sweep also renews the
  expectations of the matches still running and drops the others.

Two replicas doing the same thing at once append once: the store's optimistic check and
the engine's refusal of a result already recorded make every report idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Final, TypeVar

import grpc
import structlog

from dast.v1 import game_pb2, log_pb2, tournament_pb2
from engine import tournament as engine
from engine.core.errors import RuleViolation
from engine.registry import GAMES, GAMES_BY_NAME
from services.platform.bus import Bus, Published, cancel_and_wait, raise_if_cancelling
from services.platform.clock import Clock, wall_clock_ms
from services.tournament import options
from services.tournament.attendance import Attendance
from services.tournament.games import TRANSIENT, TournamentGames
from services.tournament.names import entrant_name
from services.tournament.results import UnreadableResult, match_report
from services.tournament.store import MatchPlace, TournamentNotFound
from services.tournament.tournaments import Loaded, Tournaments

_log = structlog.get_logger(component="tournament-conductor")
IDEMPOTENT_REFUSALS: Final = frozenset({
    engine.TournamentCode.RESULT_ALREADY_RECORDED, engine.TournamentCode.WRONG_ROUND,
    engine.TournamentCode.FINISHED,
})
"""Refusals of a report that mean another replica (or an earlier attempt) got there first."""
CREATE_CONCURRENCY: Final = 256
"""Matches created at once when a round starts: a whole round of 256 tables, so that every
creation is queued at the game service (whose group commit batches them) before the bots'
first moves in the first tables created compete with the rest (at 64 at a time a round of
256 took 4-8 s to open on a loaded machine, at 256 under 1 s: docs/benchmarks.md)."""
CREATE_ATTEMPTS: Final = 5
"""Tries of one match's creation on transient errors before leaving it to the sweep."""
RETRY_MS: Final = 500
_T = TypeVar("_T")


class Conductor:
    """Tables, results and time limits of every tournament (see the module docstring)."""

    def __init__(
        self, tournaments: Tournaments, games: TournamentGames, *,
        clock: Clock = wall_clock_ms, sweep_seconds: float = 5.0,
        results_every: int = 6, attendance: Attendance | None = None,
    ) -> None:
        self.tournaments = tournaments
        self.games = games
        self.attendance = attendance
        """Where the players of the matches created are expected (None: nowhere; no
        presence board in this process)."""
        self.clock = clock
        self.sweep_seconds = sweep_seconds
        self.results_every = results_every
        """Every how many sweeps (and on the first) the running matches are asked whether
        they ended: the durable consumer brings the ends, the sweep only what it missed."""
        self._sweeps = 0
        self._opened: dict[str, tuple[int, set[str]]] = {}
        """Per tournament, its current round and the game ids of it this replica created
        (or found created): not created again."""
        self._deadlines: list[tuple[int, str, int]] = []
        """``(deadline_ms, tournament_id, round)`` to fire, earliest first."""
        self._armed: set[tuple[str, int]] = set()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[object]] = set()
        self._create_slots = asyncio.Semaphore(CREATE_CONCURRENCY)
        self.reports = 0
        """Results this replica reported that were recorded (tests)."""
        self.created = 0
        """Matches this replica asked the game service to create (tests)."""
        tournaments.add_listener(self._after_step)

    # ---- the loop ----

    async def run(self, games_bus: Bus, *, durable: str = "tournaments") -> None:
        """Follow the games' events on ``games_bus``, sweep, fire deadlines; forever."""
        events = games_bus.all_events(durable=durable)  # registered before the first sweep
        background = [
            asyncio.create_task(self._sweep_forever(), name="tournament-sweep"),
            asyncio.create_task(self._fire_forever(), name="tournament-deadlines"),
        ]
        try:
            async for published in events:
                if _is_final(published):
                    self._spawn(self.on_game_over(published.game_id))
        finally:
            await cancel_and_wait([*background, *self._tasks])

    def _spawn(self, work: Coroutine[Any, Any, object]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[object]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # The sweep retries whatever this left undone.
            _log.error("tournament_work_failed", error=repr(task.exception()))

    def _after_step(self, loaded: Loaded, events: Sequence[engine.Event]) -> None:
        """A step this replica appended: open the new round's tables, arm its deadline."""
        if any(isinstance(event.body, engine.RoundStarted) for event in events):
            self._spawn(self.open_tables(loaded))
            self._arm(loaded)

    # ---- tables ----

    async def open_tables(self, loaded: Loaded) -> int:
        """Create every match of the current round that has no result and that this
        replica has not created yet; how many were asked for.

        The round opens in batches, each for all its tables at once: every table's request
        is built, every match created, then every stand-in seated (``ControlSeat``), then
        the players of every match expected on the presence board in one go. A table
        counts as opened once all three are done for it; one that failed a step is left to
        the next sweep, which creates it again harmlessly (its game id names the table),
        as after a kill at any line."""
        state = loaded.state
        if state.phase is not engine.Phase.RUNNING:
            return 0
        kept = await self.tournaments.names_of(loaded.tournament_id)
        names = {member: entrant_name(entrant, kept).display_name
                 for entrant in state.entrants.values() for member in entrant.members}
        bots = frozenset(player for player in names if player.startswith("bot:"))
        opened = self._opened_in(loaded.tournament_id, state.round)
        pending = {
            options.game_id_of(loaded.tournament_id, state.round, table.table): table
            for table in state.tables if table.table not in state.results
        }
        pending = {game_id: table for game_id, table in pending.items() if game_id not in opened}
        requests = {
            game_id: options.create_game_request(loaded.settings, state.options.variant,
                                                 game_id, table, names, bots)
            for game_id, table in pending.items()
        }
        created = await self._each(requests, self._create)
        level = loaded.settings.bot_level or options.DEFAULT_BOT_LEVEL
        seated = await self._each(
            {game_id: pending[game_id] for game_id in created},
            lambda game_id, table: self._seat_stand_ins(game_id, table, level))
        if self.attendance is not None:
            await self.attendance.expect_all(
                (MatchPlace(game_id, loaded.tournament_id, state.round, pending[game_id].table),
                 [seat.player_id for seat in pending[game_id].seats if seat.player_id
                  and not seat.stand_in and seat.player_id not in bots])
                for game_id in seated)
        opened.update(seated)
        self.created += len(seated)
        return len(pending)

    def _opened_in(self, tournament_id: str, round_: int) -> set[str]:
        """The game ids of ``round_`` this replica created (an earlier round's are
        forgotten)."""
        remembered = self._opened.get(tournament_id)
        if remembered is None or remembered[0] != round_:
            remembered = (round_, set())
            self._opened[tournament_id] = remembered
        return remembered[1]

    @staticmethod
    async def _each(work: dict[str, _T],
                    step: Callable[[str, _T], Coroutine[Any, Any, bool]]) -> list[str]:
        """``step`` for every game of ``work`` at once; the game ids it succeeded for."""
        done = await asyncio.gather(*(step(game_id, item) for game_id, item in work.items()))
        return [game_id for game_id, ok in zip(work, done, strict=True) if ok]

    async def _create(self, game_id: str, request: game_pb2.CreateGameRequest) -> bool:
        """Create one match (an existing one counts as created); whether it now exists."""
        async with self._create_slots:
            return await self._retried(game_id, lambda: self.games.create(request))

    async def _seat_stand_ins(self, game_id: str, table: engine.Table, level: str) -> bool:
        """Seat a bot for every absent player of the table; whether all are seated."""
        standing_in = [index for index, seat in enumerate(table.seats)
                       if seat.stand_in and seat.player_id]
        return all(await asyncio.gather(*(
            self._retried(game_id, functools.partial(self.games.stand_in, game_id, index,
                                                     level))
            for index in standing_in)))

    @staticmethod
    async def _retried(game_id: str, call: Callable[[], Awaitable[None]]) -> bool:
        """``call()``, tried again on transient errors; whether it succeeded (if not, the
        sweep tries again later)."""
        for attempt in range(CREATE_ATTEMPTS):
            try:
                await call()
                return True
            except grpc.aio.AioRpcError as error:
                if error.code() in TRANSIENT and attempt + 1 < CREATE_ATTEMPTS:
                    # A replica restarting or busy: the balancer tries another.
                    await asyncio.sleep(0.1 * (attempt + 1))
                    continue
                _log.warning("table_not_created", game_id=game_id, code=error.code().name)
                return False
        return False

    # ---- results ----

    async def on_game_over(self, game_id: str) -> bool:
        """Report the result of the match ``game_id`` if it is a tournament's and still
        unreported; whether this call recorded it."""
        place = await asyncio.to_thread(self.tournaments.store.place_of, game_id)
        if place is None:
            return False
        try:
            loaded = await self.tournaments.load(place.tournament_id)
        except TournamentNotFound:
            return False
        state = loaded.state
        if state.round != place.round or place.table in state.results or state.is_over:
            return False
        try:
            log = await self.games.finished_log(game_id)
        except grpc.aio.AioRpcError as error:
            _log.warning("result_not_read", game_id=game_id, code=error.code().name)
            return False
        if log is None:
            return False
        return await self._report(loaded, place.round, place.table, log, timed_out=False)

    async def _report(self, loaded: Loaded, round_: int, table: int,
                      log: Sequence[log_pb2.Event], *, timed_out: bool) -> bool:
        game = GAMES.get(loaded.settings.game_type)
        if game is None:
            return False
        spec = loaded.state.options.variant
        try:
            report = match_report(game, log, spec)
        except UnreadableResult as error:
            _log.error("result_unreadable", tournament_id=loaded.tournament_id,
                       round=round_, table=table, error=str(error))
            return False
        at_ms = self.clock()
        command = engine.ReportResult(
            round=round_, table=table, sides=report.sides,
            winners=() if timed_out else report.winners, timed_out=timed_out, at_ms=at_ms)

        def choose(state: engine.TournamentState) -> engine.Command | None:
            if state.round != round_ or table in state.results or state.is_over:
                return None
            return command

        try:
            _, events = await self.tournaments.step(loaded.tournament_id, choose)
        except RuleViolation as refusal:
            if refusal.code in IDEMPOTENT_REFUSALS:
                return False
            raise
        if events:
            self.reports += 1
            _log.info("result_recorded", tournament_id=loaded.tournament_id, round=round_,
                      table=table, timed_out=timed_out)
        return bool(events)

    # ---- time limits ----

    def _arm(self, loaded: Loaded) -> None:
        state = loaded.state
        if state.phase is not engine.Phase.RUNNING or not state.deadline_ms:
            return
        key = (loaded.tournament_id, state.round)
        if key in self._armed:
            return
        self._armed.add(key)
        heapq.heappush(self._deadlines, (state.deadline_ms, loaded.tournament_id, state.round))
        self._wake.set()

    async def _fire_forever(self) -> None:
        while True:
            raise_if_cancelling()
            self._wake.clear()
            now = self.clock()
            while self._deadlines and self._deadlines[0][0] <= now:
                _, tournament_id, round_ = heapq.heappop(self._deadlines)
                self._armed.discard((tournament_id, round_))
                try:
                    done = await self.time_up(tournament_id, round_)
                except Exception:
                    _log.exception("time_limit_failed", tournament_id=tournament_id)
                    done = False
                if not done:
                    heapq.heappush(self._deadlines, (now + RETRY_MS, tournament_id, round_))
                    self._armed.add((tournament_id, round_))
            delay = (self._deadlines[0][0] - self.clock()) / 1000 if self._deadlines else 3600.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(delay, 0.001))

    async def time_up(self, tournament_id: str, round_: int) -> bool:
        """Report every match of ``round_`` still without a result as timed out, with its
        score so far; whether the round is settled (False: retry later)."""
        loaded = await self.tournaments.load(tournament_id)
        state = loaded.state
        if state.round != round_ or state.is_over:
            return True
        for table in state.tables:
            if table.table in loaded.state.results:
                continue
            game_id = options.game_id_of(tournament_id, round_, table.table)
            try:
                log = await self.games.finished_log(game_id)
                timed_out = log is None
                if log is None:
                    log = await self.games.current_log(game_id)
            except grpc.aio.AioRpcError as error:
                if error.code() in TRANSIENT:
                    return False
                raise
            if log:
                await self._report(loaded, round_, table.table, log, timed_out=timed_out)
            else:
                # The match was never created (the game service was down all round): it
                # stands at no score, and the engine's rule decides it all the same.
                await self._report_unplayed(loaded, round_, table.table)
            loaded = await self.tournaments.load(tournament_id)
            if loaded.state.round != round_:
                return True
        return True

    async def _report_unplayed(self, loaded: Loaded, round_: int, table: int) -> None:
        sides = tuple(engine.SideResult(points=0) for _ in loaded.state.options.variant.sides)
        command = engine.ReportResult(round=round_, table=table, sides=sides, timed_out=True,
                                      at_ms=self.clock())

        def choose(state: engine.TournamentState) -> engine.Command | None:
            if state.round != round_ or table in state.results or state.is_over:
                return None
            return command

        with contextlib.suppress(RuleViolation):
            await self.tournaments.step(loaded.tournament_id, choose)

    # ---- sweeps ----

    async def _sweep_forever(self) -> None:
        while True:
            raise_if_cancelling()
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                _log.warning("tournament_sweep_failed", error=repr(error))
            await asyncio.sleep(self.sweep_seconds)

    async def sweep(self) -> int:
        """Bring every running tournament's current round up to date (see the module
        docstring); how many results it reported."""
        reported = 0
        check_results = self._sweeps % max(self.results_every, 1) == 0
        self._sweeps += 1
        heads = await asyncio.to_thread(self.tournaments.store.heads_in,
                                        tournament_pb2.TOURNAMENT_STATUS_RUNNING)
        running = {head.tournament_id for head in heads}
        for gone in set(self._opened) - running:
            del self._opened[gone]
        for head in heads:
            loaded = await self.tournaments.load(head.tournament_id)
            self._arm(loaded)
            await self.open_tables(loaded)
            if not check_results:
                continue
            state = loaded.state
            for table in state.tables:
                if table.table in state.results:
                    continue
                game_id = options.game_id_of(head.tournament_id, state.round, table.table)
                try:
                    if await self.on_game_over(game_id):
                        reported += 1
                except grpc.aio.AioRpcError as error:
                    if error.code() not in TRANSIENT:
                        raise
                    break
        await self.renew_expectations()
        return reported

    async def renew_expectations(self) -> None:
        """Publish again the expectations of the matches still running (their tournaments
        read afresh, so a match seated since the sweep began is kept) and drop the others."""
        if self.attendance is None:
            return
        ended: set[str] = set()
        for place in self.attendance.places():
            try:
                state = (await self.tournaments.load(place.tournament_id)).state
            except TournamentNotFound:
                ended.add(place.game_id)
                continue
            if state.is_over or state.round != place.round or place.table in state.results:
                ended.add(place.game_id)
        await self.attendance.renew(ended)


def _is_final(published: Published) -> bool:
    game = GAMES_BY_NAME.get(published.game_type)
    return game is not None and game.revealed_seed(published.entry.event) is not None
