"""Seed commitment, deck key and the event hash chain (DESIGN.md "Provably fair deals",
"Tamper evidence")."""

from __future__ import annotations

import hashlib

from dast.v1 import log_pb2
from engine.core.chain import GENESIS_HASH, chain_entries, chain_hash, find_chain_break
from engine.core.fairness import commit, deck_key, is_commitment_of
from engine.core.logformat import LogFormatError, dump_jsonl, load_jsonl


def test_commitment_is_sha256_of_the_server_seed() -> None:
    seed = bytes(range(32))
    assert commit(seed) == hashlib.sha256(seed).digest()
    assert is_commitment_of(commit(seed), seed)
    assert not is_commitment_of(commit(seed), bytes(32))


def test_deck_key_mixes_every_client_seed() -> None:
    seed = b"s" * 32
    base = deck_key(seed, [b"", b""])
    assert deck_key(seed, [b"", b""]) == base
    assert deck_key(seed, [b"alice", b""]) != base
    assert deck_key(seed, [b"", b"alice"]) != deck_key(seed, [b"alice", b""])
    # Fixed-length parts: moving bytes between seeds changes the key.
    assert deck_key(seed, [b"ab", b"c"]) != deck_key(seed, [b"a", b"bc"])
    assert deck_key(b"t" * 32, [b"", b""]) != base


def _events(n: int) -> list[log_pb2.Event]:
    return [log_pb2.Event(seq=i + 1, at_ms=1000 * i) for i in range(n)]


def test_chain_links_each_event_to_the_previous_hash() -> None:
    entries = chain_entries(_events(3))
    prev = GENESIS_HASH
    for entry in entries:
        expected = hashlib.sha256(prev + entry.event.SerializeToString(deterministic=True))
        assert entry.hash == expected.digest() == chain_hash(prev, entry.event)
        prev = entry.hash
    assert find_chain_break(entries) is None


def test_chain_detects_an_edited_event_a_forged_hash_and_a_gap() -> None:
    edited = chain_entries(_events(3))
    edited[1].event.at_ms += 1
    assert find_chain_break(edited) is not None
    assert find_chain_break(edited).index == 1  # type: ignore[union-attr]

    forged = chain_entries(_events(3))
    forged[2].hash = bytes(32)
    assert find_chain_break(forged).index == 2  # type: ignore[union-attr]

    gap = chain_entries(_events(3))
    del gap[1]
    assert find_chain_break(gap) is not None


def test_jsonl_round_trip_and_errors() -> None:
    entries = chain_entries(_events(2))
    text = dump_jsonl(entries)
    assert text.count("\n") == 2
    assert load_jsonl(text) == entries
    try:
        load_jsonl(text + "not json\n")
    except LogFormatError as error:
        assert "line 3" in str(error)
    else:
        raise AssertionError("garbage must not parse")
