"""The tamper-evident hash chain over a game's events, documented for any language.

Every stored event carries the chain hash after it; every seat receives those hashes with
the events it is sent (its receipts). A plain ``sha256(prev || event)`` would let a seat
recover hidden cards from its receipts by brute force (a dealt hand is one of about 10¹⁰;
a late-round position has far fewer candidates), so each event enters the chain salted with
a secret that the log keeps hidden until the match ends:

- ``chain_key = HMAC-SHA256(key = server_seed, message = "dast/chain-key/v1")``, where
  ``server_seed`` is the one the log's first event records in its ``dast.v1.Fairness``
  message (the game's match start carries it: ``HokmMatchStarted.fairness``,
  ``HandMatchStarted.fairness``; an empty seed when the first event records none, as in
  test fixtures: such a chain is still tamper evident but hides nothing). Every seat's
  copy of the first event has the seed stripped; the final event reveals it.
- ``salt(n) = HMAC-SHA256(key = chain_key, message = "dast/event-salt/v1" || seq(n))``
  with ``seq(n)`` as an 8-byte big-endian unsigned integer.
- ``digest(n) = SHA-256(salt(n) || canonical bytes of event n)``; the canonical bytes are
  the deterministic proto3 encoding of the whole (unredacted) ``dast.v1.Event``: fields in
  field-number order, no unknown fields.
- ``hash(n) = SHA-256(hash(n-1) || digest(n))``, with ``hash(0)`` = 32 zero bytes.

Without the chain key a receipt is a commitment nobody can open, however few the candidate
events; with the revealed seed anyone re-derives every hash of the finished log.

>>> from dast.v1 import log_pb2
>>> entries = chain_log([log_pb2.Event(seq=1), log_pb2.Event(seq=2)])
>>> find_chain_break(entries) is None
True
>>> entries[0].hash.hex()[:16]
'a038ad4ba723ed8a'
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf import any_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from dast.v1 import common_pb2, log_pb2

GENESIS_HASH: Final = bytes(32)
_CHAIN_KEY_LABEL: Final = b"dast/chain-key/v1"
_SALT_LABEL: Final = b"dast/event-salt/v1"
_FAIRNESS: Final = common_pb2.Fairness.DESCRIPTOR.full_name
_ANY: Final = any_pb2.Any.DESCRIPTOR.full_name
_SHA256_BLOCK: Final = 64


def canonical_bytes(event: log_pb2.Event) -> bytes:
    """The bytes of an event that the chain hashes."""
    return event.SerializeToString(deterministic=True)


def chain_key(server_seed: bytes) -> bytes:
    """The key salting every event of a match whose server seed is ``server_seed``."""
    return hmac.digest(server_seed, _CHAIN_KEY_LABEL, "sha256")


def _fairness_in(message: Message) -> common_pb2.Fairness | None:
    for field, value in message.ListFields():
        if field.message_type is None or field.is_repeated:
            continue
        if field.message_type.full_name == _FAIRNESS:
            assert isinstance(value, common_pb2.Fairness)
            return value
        if field.message_type.full_name == _ANY:
            value = _unpacked(value)  # a game outside the schema (log.proto)
            if value is None:
                continue
        found = _fairness_in(value)
        if found is not None:
            return found
    return None


def _unpacked(packed: any_pb2.Any) -> Message | None:
    """The message packed in ``packed`` when its type is known to this process (None
    otherwise, or when its bytes do not parse)."""
    try:
        pool = descriptor_pool.Default()  # type: ignore[no-untyped-call]
        descriptor = pool.FindMessageTypeByName(packed.TypeName())
        message = message_factory.GetMessageClass(descriptor)()
        message.ParseFromString(packed.value)
    except (KeyError, DecodeError):
        return None
    return message


def recorded_server_seed(first_event: log_pb2.Event) -> bytes:
    """The server seed a log's first event records (empty when it records none, as in a
    seat's redacted copy)."""
    fairness = _fairness_in(first_event)
    return fairness.server_seed if fairness is not None else b""


def log_chain_key(first_event: log_pb2.Event) -> bytes:
    """The chain key of a log, from the server seed its first event records."""
    return chain_key(recorded_server_seed(first_event))


@functools.lru_cache(maxsize=4096)
def _salt_pads(key: bytes) -> tuple[Any, Any]:
    """HMAC-SHA256's inner and outer hash states for ``key`` (RFC 2104), absorbed once per
    game instead of once per event: the salt costs two hash calls, not a fresh HMAC."""
    block = (key if len(key) <= _SHA256_BLOCK else hashlib.sha256(key).digest()).ljust(
        _SHA256_BLOCK, b"\0"
    )
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
    outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))
    return inner, outer


def event_salt(key: bytes, seq: int) -> bytes:
    """``salt(n) = HMAC-SHA256(key, "dast/event-salt/v1" || seq as 8-byte big-endian)``."""
    inner_pad, outer_pad = _salt_pads(key)
    inner = inner_pad.copy()
    inner.update(_SALT_LABEL + seq.to_bytes(8, "big"))
    outer = outer_pad.copy()
    outer.update(inner.digest())
    digest: bytes = outer.digest()
    return digest


def event_digest(key: bytes, event: log_pb2.Event) -> bytes:
    """``digest(n)``: the event committed under its secret salt."""
    return hashlib.sha256(event_salt(key, event.seq) + canonical_bytes(event)).digest()


def chain_hash(prev_hash: bytes, event: log_pb2.Event, key: bytes) -> bytes:
    """The hash of ``event`` following an event whose hash is ``prev_hash``, under ``key``."""
    return hashlib.sha256(prev_hash + event_digest(key, event)).digest()


def chain_entries(
    events: Iterable[log_pb2.Event], prev_hash: bytes = GENESIS_HASH, *, key: bytes
) -> list[log_pb2.LogEntry]:
    """Wrap events that follow ``prev_hash`` in log entries carrying their chain hashes."""
    entries = []
    for event in events:
        prev_hash = chain_hash(prev_hash, event, key)
        entries.append(log_pb2.LogEntry(event=event, hash=prev_hash))
    return entries


def chain_log(events: Sequence[log_pb2.Event]) -> list[log_pb2.LogEntry]:
    """A whole log from seq 1 as entries, keyed by the seed its first event records."""
    if not events:
        return []
    return chain_entries(events, key=log_chain_key(events[0]))


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """Where and why a chain fails to verify."""

    index: int
    """0-based position of the first bad entry."""
    reason: str


def find_chain_break(entries: Sequence[log_pb2.LogEntry]) -> ChainBreak | None:
    """Check seq continuity and every hash of a whole, unredacted log; return the first
    break, or None if intact."""
    if not entries:
        return None
    key = log_chain_key(entries[0].event)
    prev_hash = GENESIS_HASH
    for index, entry in enumerate(entries):
        if entry.event.seq != index + 1:
            reason = f"entry {index} has seq {entry.event.seq}, expected {index + 1}"
            return ChainBreak(index, reason)
        expected = chain_hash(prev_hash, entry.event, key)
        if not hmac.compare_digest(entry.hash, expected):
            return ChainBreak(index, f"hash mismatch at seq {entry.event.seq}")
        prev_hash = expected
    return None
