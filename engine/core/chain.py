"""The tamper-evident hash chain over a game's events.

DESIGN.md "Tamper evidence": ``hash(n) = sha256(hash(n-1) || canonical bytes of event n)``
with ``hash(0)`` = 32 zero bytes. Canonical bytes are the deterministic proto3 encoding
of the :class:`~dast.v1.log_pb2.Event` (fields in field-number order).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from dast.v1 import log_pb2

GENESIS_HASH: Final = bytes(32)


def canonical_bytes(event: log_pb2.Event) -> bytes:
    """The bytes of an event that the chain hashes."""
    return event.SerializeToString(deterministic=True)


def chain_hash(prev_hash: bytes, event: log_pb2.Event) -> bytes:
    """The hash of ``event`` following an event whose hash is ``prev_hash``."""
    return hashlib.sha256(prev_hash + canonical_bytes(event)).digest()


def chain_entries(
    events: Iterable[log_pb2.Event], prev_hash: bytes = GENESIS_HASH
) -> list[log_pb2.LogEntry]:
    """Wrap events in log entries carrying their chain hashes."""
    entries = []
    for event in events:
        prev_hash = chain_hash(prev_hash, event)
        entries.append(log_pb2.LogEntry(event=event, hash=prev_hash))
    return entries


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """Where and why a chain fails to verify."""

    index: int
    """0-based position of the first bad entry."""
    reason: str


def find_chain_break(entries: Sequence[log_pb2.LogEntry]) -> ChainBreak | None:
    """Check seq continuity and every hash; return the first break, or None if intact."""
    prev_hash = GENESIS_HASH
    for index, entry in enumerate(entries):
        if entry.event.seq != index + 1:
            reason = f"entry {index} has seq {entry.event.seq}, expected {index + 1}"
            return ChainBreak(index, reason)
        expected = chain_hash(prev_hash, entry.event)
        if entry.hash != expected:
            return ChainBreak(index, f"hash mismatch at seq {entry.event.seq}")
        prev_hash = expected
    return None
