"""Log entries for the platform tests: chained events with recognisable contents."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from dast.v1 import log_pb2
from engine.core.chain import GENESIS_HASH, chain_entries, chain_key
from services.platform.store import MemoryEventStore

HOKM = 1  # dast.v1.GameType.GAME_TYPE_HOKM


def make_entries(
    first_seq: int, count: int, prev_hash: bytes = GENESIS_HASH, *, at_ms: int = 1_000
) -> list[log_pb2.LogEntry]:
    """``count`` chained entries from ``first_seq`` on; ``at_ms`` tells rival batches apart."""
    events = [
        log_pb2.Event(seq=seq, at_ms=at_ms + seq) for seq in range(first_seq, first_seq + count)
    ]
    # Bare events record no server seed: their log is chained under the empty seed's key.
    return chain_entries(events, prev_hash, key=chain_key(b""))


def continue_log(
    log: Sequence[log_pb2.LogEntry], count: int, *, at_ms: int = 1_000
) -> list[log_pb2.LogEntry]:
    """``count`` entries that continue ``log``."""
    prev_hash = log[-1].hash if log else GENESIS_HASH
    return make_entries(len(log) + 1, count, prev_hash, at_ms=at_ms)


def seqs(entries: Sequence[log_pb2.LogEntry]) -> list[int]:
    """The seqs of some entries, for readable assertions."""
    return [entry.event.seq for entry in entries]


async def marked(store: MemoryEventStore, game_id: str, seq: int) -> None:
    """Until a relay recorded ``seq`` of the game as relayed. Its subscribers see an event,
    and JetStream acks it, before the relay writes the mark; a relay stopped between the two
    rightly leaves its claim interrupted instead."""
    while store._games[game_id].relayed_seq < seq:
        await asyncio.sleep(0.01)
