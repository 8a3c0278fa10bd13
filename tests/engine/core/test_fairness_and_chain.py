"""Seed commitment, deck key and the event hash chain (docs/architecture.md "Provably fair deals",
"Tamper evidence")."""

from __future__ import annotations

import hashlib
import hmac

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine.core.chain import (
    GENESIS_HASH,
    chain_entries,
    chain_hash,
    chain_key,
    chain_log,
    event_salt,
    find_chain_break,
    recorded_server_seed,
)
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


def _seeded_start(seed: bytes) -> log_pb2.Event:
    fairness = common_pb2.Fairness(server_seed=seed)
    started = hokm_pb2.HokmMatchStarted(fairness=fairness)
    return log_pb2.Event(seq=1, hokm=hokm_pb2.HokmEvent(match_started=started))


def test_chain_follows_the_documented_salted_construction() -> None:
    # engine/core/chain.py, written out again from its docstring, as another language would.
    seed = bytes(range(32))
    events = [_seeded_start(seed), *_events(3)[1:]]
    key = hmac.digest(seed, b"dast/chain-key/v1", "sha256")
    prev = GENESIS_HASH
    for entry in chain_log(events):
        seq = entry.event.seq.to_bytes(8, "big")
        salt = hmac.digest(key, b"dast/event-salt/v1" + seq, "sha256")
        digest = hashlib.sha256(salt + entry.event.SerializeToString(deterministic=True))
        expected = hashlib.sha256(prev + digest.digest()).digest()
        assert entry.hash == expected == chain_hash(prev, entry.event, chain_key(seed))
        prev = entry.hash
    assert recorded_server_seed(events[0]) == seed


def test_chain_key_comes_from_the_first_events_server_seed() -> None:
    plain = chain_log(_events(2))
    seeded = chain_log([_seeded_start(b"s" * 32), *_events(2)[1:]])
    assert find_chain_break(plain) is None and find_chain_break(seeded) is None
    # The same log chained under a key other than its recorded seed's does not verify.
    wrong_key = chain_entries([e.event for e in seeded], key=chain_key(b"t" * 32))
    assert find_chain_break(wrong_key) is not None


def test_chain_detects_an_edited_event_a_forged_hash_and_a_gap() -> None:
    edited = chain_log(_events(3))
    edited[1].event.at_ms += 1
    assert find_chain_break(edited) is not None
    assert find_chain_break(edited).index == 1  # type: ignore[union-attr]

    forged = chain_log(_events(3))
    forged[2].hash = bytes(32)
    assert find_chain_break(forged).index == 2  # type: ignore[union-attr]

    gap = chain_log(_events(3))
    del gap[1]
    assert find_chain_break(gap) is not None


def test_jsonl_round_trip_and_errors() -> None:
    entries = chain_log(_events(2))
    text = dump_jsonl(entries)
    assert text.count("\n") == 2
    assert load_jsonl(text) == entries
    try:
        load_jsonl(text + "not json\n")
    except LogFormatError as error:
        assert "line 3" in str(error)
    else:
        raise AssertionError("garbage must not parse")


def test_event_salt_is_hmac_sha256_for_keys_of_any_length() -> None:
    for key in (b"", b"k" * 32, b"x" * 64, b"y" * 100):
        for seq in (1, 300, 2**40):
            message = b"dast/event-salt/v1" + seq.to_bytes(8, "big")
            assert event_salt(key, seq) == hmac.digest(key, message, "sha256")
