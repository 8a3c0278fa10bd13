"""The relay: moves appended events from the store's outbox to the bus.

docs/architecture.md "Event store and bus": commands only write the store, so games go on while NATS
is down; the relay publishes what was appended and catches up after an outage. Each pass
claims games with unrelayed events (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so replicas split
the backlog and one game's events leave in seq order from one relay), publishes them, and
marks them relayed.

Exactly once in the stream: a relay that dies between publishing and marking leaves events
on the bus that the store still counts as unrelayed. Within the bus's duplicate window the
resend is dropped by its ``Nats-Msg-Id``; beyond it (every process down, NATS away longer
than the window) it would be stored again. So whenever the relay is not sure what the bus
holds for a game, it asks a bus that remembers (:class:`~services.platform.bus.
RemembersPublished`) for the game's last seq there and publishes only what follows. It is
not sure the first time it handles a game in this process (after any start), after its own
publish of the game failed, and when the store says the game's previous claim ended
unfinished (:attr:`~services.platform.store.Unrelayed.interrupted`: another replica died
holding it). Otherwise this relay published the game's events itself and recorded how far:
no question to ask. Marks are written at least every ``mark_every_seconds`` within a pass,
so that a crash leaves little to look up and nothing to resend. The in-process bus keeps no
memory to ask, and needs none: its events die with the process that publishes them.

Claims are short and renewed: a claim lasts ``lease_ms`` (a few seconds) and the relay
extends the claims it still holds every third of that while it publishes them, so a pass
that takes long keeps its games, while the games of a relay that died (SIGKILL) wait only
one lease before another relay claims them (as interrupted: it looks before it publishes).

A pass publishes its games in a sliding window: up to ``publish_concurrency`` games at once,
each game's events in seq order, one after the other (an event leaves only once the stream
acknowledged the one before it), and a game that finishes makes room for the next claimed
one at once. So a pass has as many acknowledgements in flight as it has games, up to the
window, and costs one round trip per event of its busiest game, not one per event. Within
a game the events are never pipelined: a stream that lost event k (a connection dropped
with it, a stream missing for a moment) while storing k+1 behind it would hold the game
out of order, and the lookup above, which trusts the last message on a game's subject,
would then skip k for good. One at a time, a failure can only leave the game's last
unacknowledged event in doubt. When a game fails, the pass starts no other game, lets
those in flight finish, marks what they published, and releases the failed ones as
interrupted (looked up before the retry) and the others not started as they were.

Each pass tells ``on_batch`` how many events it published (the ``dast_relay_batch_events``
histogram by default).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from services.platform.bus import Bus, RemembersPublished, game_type_name, raise_if_cancelling
from services.platform.metrics import game_metrics
from services.platform.store import RELAY_LEASE_MS, LogEntry, OutboxStore, Unrelayed

log = logging.getLogger(__name__)


class Relay:
    """Publishes the store's unrelayed events on the bus, forever, with backoff on errors.

    Call :meth:`notify` after each append so that live streams see the events at once; a
    periodic poll (``poll_seconds``) picks up what other replicas appended or gave up on.
    ``mark_every_seconds`` bounds how long a pass goes without recording its progress;
    ``max_known_games`` how many games the relay remembers having settled with the bus
    (a forgotten one costs one lookup); ``lease_ms`` how long a claim lasts unless renewed
    (see the module docstring); ``publish_concurrency`` how many games a pass publishes at
    once (its window); ``min_pass_seconds`` how soon a pass may follow one that relayed
    something (the first pass after a quiet spell starts at once); ``on_batch`` is told how
    many events each pass published.
    """

    def __init__(
        self,
        store: OutboxStore,
        bus: Bus,
        *,
        poll_seconds: float = 1.0,
        max_games: int = 100,
        max_events: int = 500,
        lease_ms: int = RELAY_LEASE_MS,
        min_backoff_seconds: float = 0.05,
        max_backoff_seconds: float = 5.0,
        mark_every_seconds: float = 1.0,
        max_known_games: int = 100_000,
        publish_concurrency: int = 256,
        min_pass_seconds: float = 0.05,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        if lease_ms <= 0 or publish_concurrency <= 0:
            raise ValueError("lease_ms and publish_concurrency must be positive")
        self._store = store
        self._bus = bus
        self._memory: RemembersPublished | None = (
            bus if isinstance(bus, RemembersPublished) else None
        )
        self._known: collections.OrderedDict[str, None] = collections.OrderedDict()
        """Games whose events on the bus this relay knows to end at the store's mark (it
        published and marked them itself), least recently relayed first."""
        self._max_known = max_known_games
        self._mark_every = mark_every_seconds
        self._poll = poll_seconds
        self._max_games = max_games
        self._max_events = max_events
        self._lease_ms = lease_ms
        self._min_backoff = min_backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._wake = asyncio.Event()
        self.published_events = 0
        """How many events this relay has published (resends within the window included)."""
        self.lookups = 0
        """How many times the relay asked the bus how far a game's events got."""
        self.skipped_events = 0
        """How many claimed events a lookup found already on the bus (not published again)."""
        self.failures = 0
        """How many passes failed to publish (the bus was down)."""
        self.renewals = 0
        """How many times the relay extended the claims it held (slow passes only)."""
        self._concurrency = publish_concurrency
        self._min_pass = min_pass_seconds
        self._on_batch = on_batch or game_metrics().relay_batch_events.observe
        self._pass_published = 0
        """Events the current pass has published so far."""

    def notify(self) -> None:
        """Wake the relay now: something was appended."""
        self._wake.set()

    async def run(self) -> None:
        """Relay until cancelled."""
        backoff = self._min_backoff
        while True:
            raise_if_cancelling()  # a cancel swallowed inside the bus still stops the relay
            self._wake.clear()
            started = time.monotonic()
            try:
                relayed = await self.relay_once()
            except Exception as error:  # the bus (or the store) is down: retry later
                self.failures += 1
                log.warning("relay pass failed, retrying in %.2fs: %r", backoff, error)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            backoff = self._min_backoff
            if relayed:
                # There may be more behind what one pass claims. Under load, passes at most
                # every min_pass_seconds: each then carries several commands' events, where
                # back-to-back passes would each pay a claim and a mark for one or two. A pass
                # costs the replica milliseconds of CPU whatever it carries: at 1,000
                # commands/s on PostgreSQL, a pass every 5 ms (19 events each) cost it 10 %
                # more CPU per command than one every 50 ms. Under load an event so waits at
                # most this pause and one pass before it reaches the bus: no player notices.
                pause = self._min_pass - (time.monotonic() - started)
                if pause > 0:
                    await asyncio.sleep(pause)
                continue
            await self._wait_for_wake()

    async def _wait_for_wake(self) -> None:
        """Sleep until :meth:`notify` or ``poll_seconds`` (asyncio.wait never eats a cancel)."""
        waiter = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({waiter}, timeout=self._poll)
        finally:
            waiter.cancel()

    async def relay_once(self) -> int:
        """Claim, publish and mark one batch; return how many events it relayed (published
        now, or found on the bus already: either way recorded as relayed).

        :raises Exception: what the bus raised; the claims it could not finish are released
            (those it was publishing as interrupted: part of them may have reached the bus).
        """
        claimed = await asyncio.to_thread(
            self._store.claim_unrelayed,
            max_games=self._max_games,
            max_events=self._max_events,
            lease_ms=self._lease_ms,
        )
        if not claimed:
            return 0
        held = {game.game_id for game in claimed}
        """The claims this pass still holds (renewed until marked or released)."""
        renewing = asyncio.create_task(self._renew_while_held(held), name="relay-lease")
        self._pass_published = 0
        try:
            return await self._relay_claimed(claimed, held)
        finally:
            if self._pass_published:
                self._on_batch(self._pass_published)
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

    async def _relay_claimed(self, claimed: list[Unrelayed], held: set[str]) -> int:
        relayed = 0
        # Marks are written together (one store transaction), at least every mark_every.
        marks: list[tuple[str, int]] = []
        last_write = time.monotonic()
        waiting = collections.deque(claimed)
        publishing: dict[asyncio.Future[None], Unrelayed] = {}
        failed: list[Unrelayed] = []
        error: BaseException | None = None
        try:
            while waiting or publishing:
                while waiting and not failed and len(publishing) < self._concurrency:
                    game = waiting.popleft()
                    publishing[asyncio.ensure_future(self._publish(game))] = game
                if not publishing:
                    break  # a game failed and the others in flight have finished
                done, _ = await asyncio.wait(publishing, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    game = publishing.pop(task)
                    if task.exception() is not None:
                        self._known.pop(game.game_id, None)
                        failed.append(game)
                        error = error or task.exception()
                        continue
                    relayed += len(game.entries)
                    if game.entries:
                        marks.append((game.game_id, game.entries[-1].event.seq))
                if marks and not failed and time.monotonic() - last_write >= self._mark_every:
                    await asyncio.shield(self._finish(marks, [], [], held))
                    marks, last_write = [], time.monotonic()
        except BaseException:  # cancelled while games were publishing
            in_flight = list(publishing.values())
            for task in publishing:
                task.cancel()
            await asyncio.gather(*publishing, return_exceptions=True)
            for game in in_flight:
                self._known.pop(game.game_id, None)
            await asyncio.shield(self._finish(marks, [*failed, *in_flight], list(waiting), held))
            raise
        if error is not None:
            await asyncio.shield(self._finish(marks, failed, list(waiting), held))
            raise error
        await self._finish(marks, [], [], held)
        return relayed

    async def _renew_while_held(self, held: set[str]) -> None:
        """Extend this pass's claims every third of a lease while it holds any (cancelled
        when the pass ends). A renewal that fails is retried at the next tick: the claims
        stay valid for the rest of their lease meanwhile."""
        interval = self._lease_ms / 3000
        while True:
            await asyncio.sleep(interval)
            if not held:
                continue
            try:
                await asyncio.to_thread(
                    self._store.renew_claims, sorted(held), lease_ms=self._lease_ms
                )
                self.renewals += 1
            except Exception as error:  # the store is down: the lease may lapse, see above
                log.warning("renewing the relay's claims failed: %r", error)

    async def _finish(
        self,
        marks: list[tuple[str, int]],
        doubtful: list[Unrelayed],
        unfinished: list[Unrelayed],
        held: set[str],
    ) -> None:
        """Mark what reached the bus as relayed and release the claims not published.

        ``doubtful`` games were being published when the pass stopped: they are released as
        interrupted, like any ``unfinished`` game whose claim already was (that doubt must
        outlive this claim); the other ``unfinished`` games were never touched.
        """
        if marks:
            await asyncio.to_thread(self._store.mark_relayed_many, marks)
            held.difference_update(game_id for game_id, _ in marks)
        interrupted = [game.game_id for game in doubtful] + [
            game.game_id for game in unfinished if game.interrupted
        ]
        untouched = [game.game_id for game in unfinished if not game.interrupted]
        if interrupted:
            await asyncio.to_thread(self._store.release, interrupted, interrupted=True)
        if untouched:
            await asyncio.to_thread(self._store.release, untouched)
        held.difference_update(interrupted)
        held.difference_update(untouched)

    async def _publish(self, game: Unrelayed) -> None:
        """Publish what the bus lacks of ``game``'s claimed entries."""
        if not game.entries:
            return
        name = game_type_name(game.game_type)
        entries: list[LogEntry] = game.entries
        settled = True  # will the bus end at the claim's last seq?
        if self._memory is not None and (game.interrupted or game.game_id not in self._known):
            self.lookups += 1
            held = await self._memory.last_published_seq(name, game.game_id)
            entries = [entry for entry in game.entries if entry.event.seq > held]
            self.skipped_events += len(game.entries) - len(entries)
            settled = held <= game.entries[-1].event.seq
        if entries:
            await self._bus.publish(name, game.game_id, entries)
            self.published_events += len(entries)
            self._pass_published += len(entries)
        if settled:
            # Known from now on; should writing the mark fail, the claim lapses and the next
            # one is interrupted, so the relay looks again all the same.
            self._known[game.game_id] = None
            self._known.move_to_end(game.game_id)
            while len(self._known) > self._max_known:
                self._known.popitem(last=False)
        else:  # the bus held more than this claim: the next claim must look again
            self._known.pop(game.game_id, None)


class RelayThread:
    """A :class:`Relay` on a thread of its own, with its own event loop and bus connection.

    Publishing to JetStream waits for an ack per event and parses every reply: on the
    server's event loop that work takes turns with the requests, and a command's latency
    then includes whole relay passes (a p99 of 135–170 ms at 1,000 commands/s on PostgreSQL
    and NATS). Here the relay's loop only shares the GIL, which the interpreter hands over
    every switch interval. ``open_bus`` makes the relay's own bus (a second NATS
    connection); the in-process bus cannot be shared across loops and needs no relay
    thread (the game service publishes its events itself).

    The relay itself is unchanged, so its exactly-once guarantee holds as it is.
    :meth:`notify` may be called from any thread.
    """

    def __init__(
        self, store: OutboxStore, open_bus: Callable[[], Bus], **relay_options: Any
    ) -> None:
        self._store = store
        self._open_bus = open_bus
        self._options = relay_options
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = threading.Event()
        self._gate = _WakeGate()
        self.relay: Relay | None = None
        """The relay, once the thread runs (for its counters)."""

    def notify(self) -> None:
        """Wake the relay now (thread-safe). While the relay is busy this only leaves a
        mark it reads before it would sleep: no system call per append under load."""
        gate, loop, relay = self._gate, self._loop, self.relay
        gate.pending = True
        if loop is None or relay is None or not gate.sleeping or gate.kicked:
            return
        gate.kicked = True
        with contextlib.suppress(RuntimeError):  # the loop closed: the relay is stopping
            loop.call_soon_threadsafe(relay.notify)

    async def run(self) -> None:
        """Relay on the thread until cancelled; then stop the thread and close its bus.

        :raises Exception: what starting the relay's bus raised.
        """
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        caller = asyncio.get_running_loop()
        thread = threading.Thread(
            target=self._main, args=(caller, finished), name="relay", daemon=True
        )
        thread.start()
        try:
            await asyncio.shield(finished)
        finally:
            self._stopping.set()
            loop, task = self._loop, self._task
            if loop is not None and task is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(task.cancel)
            await asyncio.to_thread(thread.join)

    def _main(self, caller: asyncio.AbstractEventLoop, finished: asyncio.Future[None]) -> None:
        def report(error: BaseException | None) -> None:
            if finished.done():
                return
            if error is None or isinstance(error, asyncio.CancelledError):
                finished.set_result(None)
            else:
                finished.set_exception(error)

        outcome: BaseException | None = None
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported to run(), which raises it
            outcome = error
        with contextlib.suppress(RuntimeError):  # the caller's loop is gone already
            caller.call_soon_threadsafe(report, outcome)

    async def _serve(self) -> None:
        # First make this task cancellable from run(), then look whether it already stopped.
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()
        if self._stopping.is_set():
            return
        bus = self._open_bus()
        try:
            await bus.start()
            relay = _GatedRelay(self._store, bus, self._gate, **self._options)
            self.relay = relay
            relay.notify()  # whatever was appended while the thread started
            await relay.run()
        finally:
            self._loop = None
            await bus.close()


class _WakeGate:
    """Wake-ups from the request loop to the relay's loop, crossing threads.

    ``pending`` says something was appended since the relay last looked; ``sleeping``
    that the relay waits for a wake-up, the only time one must be sent (``kicked``: sent
    already). The relay sets ``sleeping`` before it reads ``pending`` and :meth:`RelayThread.
    notify` sets ``pending`` before it reads ``sleeping``, so (the GIL orders these plain
    reads and writes) at least one of them sees the other's write: no append is left
    waiting for the poll.
    """

    def __init__(self) -> None:
        self.pending = False
        self.sleeping = False
        self.kicked = False


class _GatedRelay(Relay):
    """A relay that, before it sleeps, makes another pass if :class:`_WakeGate` says
    something was appended meanwhile."""

    def __init__(self, store: OutboxStore, bus: Bus, gate: _WakeGate, **options: Any) -> None:
        super().__init__(store, bus, **options)
        self._gate = gate

    async def _wait_for_wake(self) -> None:
        gate = self._gate
        gate.sleeping = True
        try:
            if not gate.pending:
                await super()._wait_for_wake()
        finally:
            gate.sleeping = False
            gate.kicked = False
            gate.pending = False  # the pass that follows at once sees every append so far
