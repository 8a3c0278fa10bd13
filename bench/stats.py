"""Benchmarks of the stats service.

Measurements (each a function of :data:`MEASUREMENTS`, returning its JSON keys; add one
there and it runs with the others, or alone with ``--only NAME``):

- ``projection``: ``projected_events_per_s``, the events per second the stats service
  projects from the bus in embedded mode: bot matches of every variant of both games
  (played by the engine's ``random`` bots before timing, their logs repeated under fresh
  game ids up to ``--events``) are published to the in-process bus, then the service's
  projection (:class:`services.stats.app.Stats`, batches committed to a SQLite file with
  every game's last applied seq) drains them. ``bus_drain_events_per_s`` is the baseline
  of the same run: a consumer that only reads the same events off the bus.
  ``projected_events_per_cpu_s`` divides by the CPU time the process used instead of the
  wall time (every thread: the event loop and the store's), which a machine shared with
  other work does not distort; ``projector_only_events_per_cpu_s`` is the projection alone
  over the same events (no bus, no event loop, no thread hand-over). ``projected_matches``
  and ``mean_batch_events`` say what was projected.
- ``audit_js``: ``audit_ms_per_match_node``, clients/verify-js auditing a sealed 7-point
  Hokm match under Node, and ``audit_ms_per_match_python`` for ``dast verify``'s checks of
  the same file in the same run (``bench/audit_js.py``).
- ``audit``: ``audit_ms_per_match``, milliseconds to audit the same sealed 7-point Hokm
  match (:func:`bench.audit_js.sealed_match`) the way ``dast verify``, ``dast audit`` and
  AuditService do (read the file, then :func:`engine.core.verification.verify_export`:
  chain, commitment, every deal and move re-run, seal). Its baseline in the same run,
  ``audit_replay_ms_per_match``, reads the same file and only folds ``evolve`` over it (what
  any replay costs); ``audit_vs_replay`` is their ratio. Both in CPU time of the process
  (the audit timed by :func:`bench.audit_js.python_audit_ms`).

Usage: ``python bench/stats.py --json [--events 200000] [--only projection]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.audit_js import measure_audit, python_audit_ms, sealed_match
from bench.report import print_figures
from dast.v1 import hand_pb2, hokm_pb2, log_pb2
from engine import hand, hokm
from engine.core.logformat import load_log
from engine.core.testing import play_bots
from engine.registry import GAMES_BY_NAME, game_of_event
from services.platform.bus import InProcessBus
from services.stats.app import mount_stats_service
from services.stats.store import StatsStore

VARIANTS: list[tuple[Any, Any, int]] = [
    (hokm, hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS), 4),
    (hokm, hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS), 3),
    (hokm, hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS), 2),
    (hand, hand_pb2.HandRules(players=2), 2),
    (hand, hand_pb2.HandRules(players=3), 3),
    (hand, hand_pb2.HandRules(players=4), 4),
    (hand, hand_pb2.HandRules(players=4, partnerships=True), 4),
]


def bot_logs(per_variant: int) -> list[tuple[str, list[log_pb2.Event]]]:
    """Whole matches of every variant between the engine's random bots (name, log)."""
    logs = []
    for index, (game, rules, seats) in enumerate(VARIANTS):
        bots = game.bot_policies(None)
        for n in range(per_variant):
            seed = f"bench/stats/{index}/{n}".encode().ljust(32, b".")
            logs.append((game.NAME, play_bots(game, bots, rules, seed, ["random"] * seats,
                                              n, at_ms=1_764_547_200_000 + n * 60_000)))
    return logs


def _stream(logs: list[tuple[str, list[log_pb2.Event]]], events: int
            ) -> list[tuple[str, str, list[log_pb2.LogEntry]]]:
    """Publications (game, game id, entries) of at least ``events`` events: the logs again
    and again under fresh ids, every game's events in its own few publications (a command
    appends a few events at once), the games interleaved."""
    games: list[tuple[str, str, list[log_pb2.LogEntry]]] = []
    total = copy = 0
    while total < events:
        for name, log in logs:
            games.append((name, f"b{copy}-{len(games)}",
                          [log_pb2.LogEntry(event=event) for event in log]))
            total += len(log)
        copy += 1
    chunks: list[tuple[str, str, list[log_pb2.LogEntry]]] = []
    step = 0
    while games:
        still = []
        for name, game_id, entries in games:
            part, rest = entries[step * 4:(step + 1) * 4], entries[(step + 1) * 4:]
            if part:
                chunks.append((name, game_id, part))
            if rest:
                still.append((name, game_id, entries))
        games = still
        step += 1
    return chunks


async def _publish(bus: InProcessBus, chunks: list[tuple[str, str, list[Any]]]) -> int:
    for name, game_id, entries in chunks:
        await bus.publish(name, game_id, entries)
    return sum(len(entries) for _, _, entries in chunks)


async def _drain_only(chunks: list[tuple[str, str, list[Any]]]) -> float:
    bus = InProcessBus()
    events = bus.all_events(durable="baseline")
    total = await _publish(bus, chunks)
    started = time.perf_counter()
    seen = 0
    async for _ in events:
        seen += 1
        if seen == total:
            break
    return total / (time.perf_counter() - started)


async def _project(chunks: list[tuple[str, str, list[Any]]], folder: Path
                   ) -> dict[str, Any]:
    import grpc

    store = StatsStore.open(f"sqlite:///{folder / 'stats.db'}")
    bus = InProcessBus()
    stats = mount_stats_service(grpc.aio.server(), store)
    work = stats.follow(bus, durable="stats")  # registered: the bus keeps what comes now
    total = await _publish(bus, chunks)
    batches = 0
    project = stats.project

    async def counted(batch: Any) -> Any:
        nonlocal batches
        batches += 1
        return await project(batch)

    stats.project = counted  # type: ignore[method-assign]
    started, cpu_started = time.perf_counter(), time.process_time()
    task = asyncio.create_task(work)
    while stats.applied_events < total:
        await asyncio.sleep(0.005)
        if task.done():
            task.result()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await bus.close()
    finished = len(store.unfinished_games())
    store.close()
    assert finished == 0, "every projected match should be over"
    return {"projected_events_per_s": round(total / seconds),
            "projected_events_per_cpu_s": round(total / cpu_seconds),
            "projected_events": total, "mean_batch_events": round(total / max(batches, 1))}


def _projector_only(chunks: list[tuple[str, str, list[Any]]], folder: Path) -> float:
    """Events per CPU second of :class:`Projector` alone over the same events, in batches of
    the feed's size, committed to a SQLite file (no bus, no event loop, no thread)."""
    from services.platform.bus import Published
    from services.stats.feed import DEFAULT_MAX_BATCH
    from services.stats.projector import Delivery, Projector

    deliveries = [Delivery(Published(name, game_id, entry))
                  for name, game_id, entries in chunks for entry in entries]
    store = StatsStore.open(f"sqlite:///{folder / 'alone.db'}")
    projector = Projector(store)
    started = time.process_time()
    for start in range(0, len(deliveries), DEFAULT_MAX_BATCH):
        projector.project(deliveries[start:start + DEFAULT_MAX_BATCH])
    seconds = time.process_time() - started
    store.close()
    return len(deliveries) / seconds


def measure_projection(args: argparse.Namespace) -> dict[str, Any]:
    """``projected_events_per_s`` and its baselines (see the module's docstring)."""
    logs = bot_logs(args.matches)
    chunks = _stream(logs, args.events)
    matches = len({game_id for _, game_id, _ in chunks})
    assert all(name in GAMES_BY_NAME for name, _, _ in chunks)
    with tempfile.TemporaryDirectory() as folder:
        projected = asyncio.run(_project(chunks, Path(folder)))
        alone = _projector_only(chunks, Path(folder))
    baseline = asyncio.run(_drain_only(chunks))
    return {**projected, "projected_matches": matches,
            "projector_only_events_per_cpu_s": round(alone),
            "bus_drain_events_per_s": round(baseline)}


AUDIT_REPEAT = 20
"""Timed audits, and timed baseline replays, of the ``audit`` measurement."""


def measure_verify_export() -> dict[str, Any]:
    """``audit_ms_per_match`` and its baseline (see the module's docstring)."""
    text = sealed_match()

    def replay() -> None:
        events = [entry.event for entry in load_log(text).entries]
        assert game_of_event(events[0]).replay(events) is not None

    replay()  # warm-up, as the audit's
    started = time.process_time()  # CPU time: the shared machine's load aside
    for _ in range(AUDIT_REPEAT):
        replay()
    replay_ms = (time.process_time() - started) * 1000 / AUDIT_REPEAT
    audit_ms = python_audit_ms(text, AUDIT_REPEAT)
    return {"audit_ms_per_match": round(audit_ms, 2),
            "audit_replay_ms_per_match": round(replay_ms, 2),
            "audit_vs_replay": round(audit_ms / replay_ms, 2)}


MEASUREMENTS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "projection": measure_projection,
    "audit_js": lambda args: measure_audit(),
    "audit": lambda args: measure_verify_export(),
}
"""Every measurement of this bench by name; each returns the JSON keys it measured."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", choices=sorted(MEASUREMENTS), action="append",
                        help="run only these measurements (repeatable)")
    parser.add_argument("--events", type=int, default=200_000,
                        help="events to project (the logs repeated under fresh ids)")
    parser.add_argument("--matches", type=int, default=10,
                        help="distinct bot matches per variant")
    args = parser.parse_args()
    result: dict[str, Any] = {}
    for name in args.only or list(MEASUREMENTS):
        result.update(MEASUREMENTS[name](args))
    print_figures(result, as_json=args.json, width=24)


if __name__ == "__main__":
    main()
