"""What must hold after the run, checked against the system's own records.

- every match finished;
- every match's events are stored once each, seq 1..n without a gap, in SQL, and published
  once each, in the same order, on the JetStream stream;
- every match's log verifies: the hash chain, the seed commitment, every deal and move
  re-derived, and the server's seal under its signing key;
- every (seq, hash) a watcher was sent is in the log, and no watcher saw a gap or a
  duplicate (each resumed from its last seq after every drop);
- (where the stats service runs) its projections equal a recomputation from the logs.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import nats
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from sqlalchemy import create_engine, text

from dast.v1 import game_pb2, game_pb2_grpc, log_pb2
from engine.core.audit import audit_log
from engine.core.seal import verify_seal
from services.platform.auth import Role
from services.platform.token_keys import TokenKeys
from services.stats.store import StatsStore
from tests.reliability.load import Load, bearer, retrying
from tests.services.stats.checks import assert_matches_logs, stats_progress
from tests.support.tokens import mint_with

EVENTS_STREAM = "DAST_EVENTS"
EVENTS_PREFIX = "dast.events"


@dataclass
class Findings:
    """The outcome of the checks: counts for the report, and every problem found."""

    matches: int = 0
    finished: int = 0
    events: int = 0
    lost: int = 0
    duplicated: int = 0
    unverifiable: int = 0
    takeovers: Counter[str] = field(default_factory=Counter)
    """Seats handed to a bot during a match, per game."""
    returns: Counter[str] = field(default_factory=Counter)
    """Seats given back to their player (who came back) during a match, per game."""
    watcher_events: int = 0
    watcher_reconnections: int = 0
    stats_checked: bool = False
    """Every stats projection and rating was compared with its recomputation, and equal."""
    problems: list[str] = field(default_factory=list)


async def wait_until(predicate: Callable[[], Awaitable[bool]], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if await predicate():
            return True
        await asyncio.sleep(0.5)
    return False


def stored_seqs(database_url: str, game_ids: list[str]) -> dict[str, list[int]]:
    """Every stored event's seq, per game, in seq order (duplicates would show twice)."""
    engine = create_engine(database_url)
    found: dict[str, list[int]] = {game_id: [] for game_id in game_ids}
    try:
        with engine.connect() as db:
            rows = db.execute(text("SELECT game_id, seq FROM events ORDER BY game_id, seq"))
            for row in rows:
                if row.game_id in found:
                    found[row.game_id].append(int(row.seq))
    finally:
        engine.dispose()
    return found


async def streamed_seqs(nats_url: str) -> dict[str, list[int]]:
    """Every message of the events stream, as seqs per game, in stream order."""
    connection = await nats.connect(nats_url, connect_timeout=5, max_reconnect_attempts=3)
    found: dict[str, list[int]] = {}
    try:
        subscription = await connection.jetstream().pull_subscribe(
            f"{EVENTS_PREFIX}.>", stream=EVENTS_STREAM,
            config=ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL))
        pending = (await subscription.consumer_info()).num_pending or 0
        while pending:
            messages = await subscription.fetch(min(pending, 512), timeout=10)
            for message in messages:
                game_id = message.subject.rsplit(".", 1)[1]
                entry = log_pb2.LogEntry.FromString(message.data)
                found.setdefault(game_id, []).append(entry.event.seq)
            pending = messages[-1].metadata.num_pending or 0
        await subscription.unsubscribe()
    finally:
        await connection.close()
    return found


def sequence_problems(where: str, game_id: str, seqs: list[int]) -> tuple[int, int, str | None]:
    """(lost, duplicated, problem) of one game's seqs against 1..max."""
    if not seqs:
        return 0, 0, f"{where}: {game_id} has no events"
    distinct = set(seqs)
    lost = max(distinct) - len(distinct)
    duplicated = len(seqs) - len(distinct)
    in_order = seqs == sorted(seqs)
    if lost or duplicated or not in_order:
        return lost, duplicated, (f"{where}: {game_id}: {lost} missing, {duplicated} "
                                  f"duplicated, {'in' if in_order else 'out of'} order")
    return 0, 0, None


async def check_everything(load: Load, database_url: str, nats_url: str, keys: TokenKeys, *,
                           stats_running: bool, settle_seconds: float = 120) -> Findings:
    findings = Findings(matches=len(load.matches))
    game_ids = sorted(load.matches)

    async def all_over() -> bool:
        return not await load.unfinished()

    await wait_until(all_over, settle_seconds)
    unfinished = await load.unfinished()
    findings.finished = findings.matches - len(unfinished)
    findings.problems += [f"{game_id} did not finish" for game_id in unfinished]

    stored = await asyncio.to_thread(stored_seqs, database_url, game_ids)

    async def relayed() -> bool:
        streamed = await streamed_seqs(nats_url)
        return all(len(streamed.get(game_id, [])) >= len(stored[game_id])
                   for game_id in game_ids)

    await wait_until(relayed, 60)
    streamed = await streamed_seqs(nats_url)
    for game_id in game_ids:
        findings.events += len(stored[game_id])
        for where, seqs in (("SQL", stored[game_id]), ("JetStream", streamed.get(game_id, []))):
            lost, duplicated, problem = sequence_problems(where, game_id, seqs)
            findings.lost += lost
            findings.duplicated += duplicated
            if problem:
                findings.problems.append(problem)
        missing_from_stream = len(stored[game_id]) - len(set(streamed.get(game_id, [])))
        if missing_from_stream > 0:
            findings.lost += missing_from_stream
            findings.problems.append(
                f"JetStream: {game_id} lacks {missing_from_stream} stored events")

    await load.watchers_done(30)
    logs = await _check_logs(load, keys, game_ids, findings)
    if stats_running:
        await _check_stats(database_url, logs, findings)
    for watcher in load.watchers:
        findings.watcher_events += len(watcher.received)
        findings.watcher_reconnections += watcher.reconnections
        findings.problems += watcher.problems()
    return findings


async def _check_logs(load: Load, keys: TokenKeys, game_ids: list[str], findings: Findings
                      ) -> dict[str, list[log_pb2.Event]]:
    """Export every match; audit it; check the seal and the watchers' receipts. The logs'
    events, by game."""
    logs: dict[str, list[log_pb2.Event]] = {}
    admin = bearer(mint_with(keys, "reliability-audit", Role.ADMIN))
    game: game_pb2_grpc.GameServiceStub = load.game
    key = await retrying(load.tally, lambda: game.GetSigningKey(
        game_pb2.GetSigningKeyRequest(), metadata=admin, timeout=10))
    watched: dict[str, dict[int, bytes]] = {}
    for watcher in load.watchers:
        watched.setdefault(watcher.game_id, {}).update(watcher.received)
    for game_id in game_ids:
        export = await retrying(load.tally, lambda g=game_id: game.ExportLog(  # type: ignore[misc]
            game_pb2.ExportLogRequest(game_id=g), metadata=admin, timeout=30))
        entries = list(export.entries)
        logs[game_id] = [entry.event for entry in entries]
        for entry in entries:
            if entry.event.HasField("seat_control"):
                if entry.event.seat_control.bot:
                    findings.takeovers[game_id] += 1
                else:
                    findings.returns[game_id] += 1
        report = await asyncio.to_thread(audit_log, entries)
        seal_problem = (verify_seal(export.seal, bytes(key.public_key))
                        if export.HasField("seal") else "missing")
        hashes = {entry.event.seq: bytes(entry.hash) for entry in entries}
        foreign = [seq for seq, sent in watched.get(game_id, {}).items()
                   if hashes.get(seq) != sent]
        findings.problems += [
            f"a watcher of {game_id} stopped at seq {watcher.last_seq} of {len(entries)}"
            for watcher in load.watchers
            if watcher.game_id == game_id and watcher.last_seq != len(entries)]
        if not report.ok or seal_problem is not None or foreign:
            findings.unverifiable += 1
            reasons = [str(finding) for finding in report.findings]
            if seal_problem is not None:
                reasons.append(f"seal: {seal_problem}")
            if foreign:
                reasons.append(f"watchers were sent hashes the log lacks at seqs {foreign[:5]}")
            findings.problems.append(f"{game_id} does not verify: {'; '.join(reasons)}")
    return logs


async def _check_stats(database_url: str, logs: dict[str, list[log_pb2.Event]],
                       findings: Findings) -> None:
    """Once the stats service has applied every event, every projection and rating equals
    the recomputation from the logs (its own code, not the projector's)."""
    events = sum(len(events) for events in logs.values())

    async def caught_up() -> bool:
        over, applied = await asyncio.to_thread(stats_progress, database_url)
        return over >= len(logs) and applied >= events

    if not await wait_until(caught_up, 120):
        over, applied = await asyncio.to_thread(stats_progress, database_url)
        findings.problems.append(f"stats: {over} of {len(logs)} matches over and {applied} "
                                 f"of {events} events applied")
        return
    store = await asyncio.to_thread(StatsStore.open, database_url)
    try:
        await asyncio.to_thread(assert_matches_logs, store, logs)
        findings.stats_checked = True
    except AssertionError as error:
        findings.problems.append(f"stats differ from the recomputation: {str(error)[:500]}")
    finally:
        store.close()
