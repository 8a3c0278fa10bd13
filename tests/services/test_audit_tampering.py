"""The shared verification (engine/core/verification.py, behind ``dast verify``, ``dast
audit`` and AuditService) against every kind of tampering, and what it says.

Each forgery starts from a genuine, sealed export of a 7-point Hokm match (and of a Hand
match), edits it as a forger would, with and without recomputing the hash chain, and checks
the verdict: which check failed, its stable code, the seq it names, and the plain words and
the expected and found values it reports. Untouched exports of every golden log pass.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from google.protobuf.message import DecodeError

from dast.v1 import log_pb2
from engine.core.audit import Check, Finding
from engine.core.chain import chain_log
from engine.core.fairness import commit
from engine.core.logformat import Receipt, load_jsonl
from engine.core.rng import DeterministicRandom
from engine.core.verification import Outcome, Verification, verify_export
from services.platform.keys import LogSigner
from tests.golden_logs import GOLDEN

SERVER = LogSigner.from_seed(b"audit-tests-server-key-000000000")
GAME_ID = "tampered"


@functools.cache
def _genuine(name: str) -> tuple[log_pb2.LogEntry, ...]:
    match = next(m for m in GOLDEN if m.name == name)
    return tuple(load_jsonl(match.path.read_text(encoding="utf-8")))


def _copy(entries: tuple[log_pb2.LogEntry, ...] | list[log_pb2.LogEntry]
          ) -> list[log_pb2.LogEntry]:
    copies = []
    for entry in entries:
        copy = log_pb2.LogEntry()
        copy.CopyFrom(entry)
        copies.append(copy)
    return copies


def _sealed(entries: list[log_pb2.LogEntry], signer: LogSigner = SERVER) -> log_pb2.LogSeal:
    return signer.seal(GAME_ID, entries[-1].event.seq, entries[-1].hash)


def _verify(entries: list[log_pb2.LogEntry], seal: log_pb2.LogSeal | None,
            receipts: list[Receipt] | None = None) -> Verification:
    return verify_export(entries, seal, trusted_key=SERVER.public_key,
                         trusted_key_name="the server's key", receipts=receipts or [])


def _rechained(entries: list[log_pb2.LogEntry]) -> list[log_pb2.LogEntry]:
    """The forger's next step: renumber nothing, recompute every hash."""
    return chain_log([entry.event for entry in entries])


def _payload(event: log_pb2.Event) -> tuple[Any, str]:
    member = event.WhichOneof("game")
    assert member is not None
    payload = getattr(event, member)
    return payload, payload.WhichOneof("kind")


def _first(entries: list[log_pb2.LogEntry], kind: str) -> int:
    """The index of the first entry whose event is of ``kind``."""
    return next(i for i, e in enumerate(entries) if _payload(e.event)[1] == kind)


def _only(verification: Verification, check: Check) -> Finding:
    assert not verification.ok
    found = [f for f in verification.findings if f.check is check]
    assert found, verification.findings
    assert verification.outcomes[check] is Outcome.FAILED
    return found[0]


@pytest.mark.parametrize("match", GOLDEN, ids=lambda m: m.name)
def test_every_untouched_export_passes_every_check(match: Any) -> None:
    entries = _copy(_genuine(match.name))
    receipts = [Receipt(e.event.seq, e.hash) for e in entries[::3]]
    verification = _verify(entries, _sealed(entries), receipts)
    assert verification.ok, verification.findings
    assert set(verification.outcomes.values()) == {Outcome.PASSED}
    assert verification.receipts_matched == len(receipts)
    assert verification.seal_key == SERVER.public_key


@pytest.mark.parametrize("name", ["hokm_4p", "hand_2p"])
def test_an_edited_card_in_a_deal(name: str) -> None:
    entries = _copy(_genuine(name))
    index = next(i for i, e in enumerate(entries) if _payload(e.event)[1] == "cards_dealt"
                 and sum(bool(h.cards) for h in _payload(e.event)[0].cards_dealt.hands) >= 2)
    payload, _ = _payload(entries[index].event)
    hands = payload.cards_dealt.hands
    hands[0].cards[0], hands[1].cards[0] = hands[1].cards[0], hands[0].cards[0]
    seq = index + 1
    # As edited: the chain breaks at the deal.
    chain = _only(_verify(entries, _sealed(_copy(_genuine(name)))), Check.CHAIN)
    assert (chain.code, chain.seq) == ("hash_mismatch", seq)
    assert chain.message.startswith(f"seq {seq}: the stored hash does not follow")
    assert chain.expected != chain.found
    # Rechained and sealed again by the server's key: only the re-run catches the rigged deal.
    forged = _rechained(entries)
    deals = _only(_verify(forged, _sealed(forged)), Check.DEALS)
    assert (deals.code, deals.seq) == ("event_differs", seq)
    assert f"{name[:4]}.cards_dealt.hands[0].cards differs" in deals.message
    dealt = payload.cards_dealt.hands[0].cards
    assert str(dealt[0]) in deals.found and str(dealt[0]) not in deals.expected.split(",")[0]


def test_a_dropped_event() -> None:
    entries = _copy(_genuine("hokm_4p"))
    index = _first(entries, "card_played")
    del entries[index]
    seq = index + 1
    chain = _only(_verify(entries, _sealed(_copy(_genuine("hokm_4p")))), Check.CHAIN)
    assert (chain.code, chain.seq) == ("seq_gap", seq)
    assert chain.message == (f"seq {seq}: the log jumps from seq {seq - 1} to seq {seq + 1}: "
                             "an event is missing or out of place")
    assert (chain.expected, chain.found) == (f"seq {seq}", f"seq {seq + 1}")
    # Renumbered and rechained: the moves no longer follow from one another.
    for later, entry in enumerate(entries[index:], start=seq):
        entry.event.seq = later
    forged = _rechained(entries)
    verification = _verify(forged, _sealed(forged))
    assert verification.outcomes[Check.CHAIN] is Outcome.PASSED
    deals = _only(verification, Check.DEALS)
    assert deals.seq == seq and deals.code in ("event_differs", "move_breaks_rule")


def test_reordered_events() -> None:
    entries = _copy(_genuine("hokm_4p"))
    index = _first(entries, "card_played")
    seq = index + 1
    entries.insert(index + 2, entries.pop(index))  # seqs now run …, s+1, s+2, s, s+3 …
    chain = _only(_verify(entries, None), Check.CHAIN)
    assert (chain.code, chain.seq) == ("seq_gap", seq)
    assert (chain.expected, chain.found) == (f"seq {seq}", f"seq {seq + 1}")
    # Renumbered to hide the move, the hashes still give it away.
    for position in range(index, index + 3):
        entries[position].event.seq = position + 1
    chain = _only(_verify(entries, None), Check.CHAIN)
    assert (chain.code, chain.seq) == ("hash_mismatch", seq)
    # An event played twice: the log goes back in seq.
    entries = _copy(_genuine("hokm_4p"))
    entries.insert(index + 1, _copy([entries[index]])[0])
    chain = _only(_verify(entries, None), Check.CHAIN)
    assert (chain.code, chain.seq) == ("seq_out_of_order", seq + 1)
    assert chain.message == (f"seq {seq + 1}: the log goes back to seq {seq} after seq "
                             f"{seq}: events are out of order or repeated")


def test_swapped_events() -> None:
    """Two plays of one seat exchanged in place, seqs kept: the chain breaks at the first;
    rechained, the re-run finds a card played that the rules did not allow there."""
    entries = _copy(_genuine("hokm_4p"))
    plays = [i for i, e in enumerate(entries) if _payload(e.event)[1] == "card_played"
             and _payload(e.event)[0].card_played.seat == 1]
    first, second = entries[plays[0]].event.hokm, entries[plays[1]].event.hokm
    first.card_played.card, second.card_played.card = (
        second.card_played.card, first.card_played.card)
    seq = plays[0] + 1
    chain = _only(_verify(entries, None), Check.CHAIN)
    assert (chain.code, chain.seq) == ("hash_mismatch", seq)
    forged = _rechained(entries)
    deals = _only(_verify(forged, _sealed(forged)), Check.DEALS)
    # The first swapped card may be one the seat could have played; the plays after it
    # then break the rules (a suit not followed) or differ.
    assert deals.seq is not None and seq <= deals.seq <= plays[1] + 1
    assert deals.code in ("event_differs", "move_breaks_rule")
    assert deals.message.startswith(f"seq {deals.seq}: ")


def test_a_changed_server_seed() -> None:
    entries = _copy(_genuine("hokm_4p"))
    last = entries[-1].event
    original = last.hokm.match_ended.server_seed
    forged_seed = bytes(32)
    last.hokm.match_ended.server_seed = forged_seed
    verification = _verify(entries, None)
    chain = _only(verification, Check.CHAIN)
    assert (chain.code, chain.seq) == ("hash_mismatch", last.seq)
    commitment = _only(verification, Check.COMMITMENT)
    assert (commitment.code, commitment.seq) == ("commitment_mismatch", last.seq)
    assert "is not the one committed to at seq 1" in commitment.message
    assert commitment.expected.startswith(f"SHA-256 {commit(original).hex()[:16]}")
    assert commitment.found.startswith(f"SHA-256 {commit(forged_seed).hex()[:16]}")
    assert verification.outcomes[Check.DEALS] is Outcome.SKIPPED
    # A forger changing the seed everywhere (commitment too), rechained: other deals.
    entries = _copy(_genuine("hokm_4p"))
    start = entries[0].event.hokm.match_started.fairness
    start.server_seed = forged_seed
    start.server_seed_commitment = commit(forged_seed)
    entries[-1].event.hokm.match_ended.server_seed = forged_seed
    forged = _rechained(entries)
    deals = _only(_verify(forged, _sealed(forged)), Check.DEALS)
    assert deals.code == "event_differs"
    assert "cards_dealt" in deals.message or "hakem" in deals.message


@pytest.mark.parametrize("name, totals", [("hokm_4p", "scores"), ("hand_2p", "totals")])
def test_a_changed_score(name: str, totals: str) -> None:
    entries = _copy(_genuine(name))
    index = _first(entries, "round_ended")
    payload, _ = _payload(entries[index].event)
    scores = getattr(payload.round_ended, totals)
    before = list(scores)
    scores[0] += 1
    seq = index + 1
    chain = _only(_verify(entries, None), Check.CHAIN)
    assert (chain.code, chain.seq) == ("hash_mismatch", seq)
    forged = _rechained(entries)
    deals = _only(_verify(forged, _sealed(forged)), Check.DEALS)
    assert (deals.code, deals.seq) == ("event_differs", seq)
    assert f".round_ended.{totals} differs" in deals.message
    assert deals.expected == "[" + ", ".join(map(str, before)) + "]"
    assert deals.found == "[" + ", ".join(map(str, scores)) + "]"


def test_a_removed_or_broken_signature() -> None:
    entries = _copy(_genuine("hokm_4p"))
    missing = _only(_verify(entries, None), Check.SEAL)
    assert (missing.code, missing.message) == (
        "seal_missing", "the log carries no seal: nobody vouches for it")
    seal = _sealed(entries)
    seal.ClearField("signature")
    malformed = _only(_verify(entries, seal), Check.SEAL)
    assert malformed.code == "seal_malformed" and "0-byte signature" in malformed.found
    seal = _sealed(entries)
    seal.signature = bytes([seal.signature[0] ^ 1]) + seal.signature[1:]
    bad = _only(_verify(entries, seal), Check.SEAL)
    assert (bad.code, bad.seq) == ("seal_bad_signature", entries[-1].event.seq)
    other = _only(_verify(entries, _sealed(entries, LogSigner.generate())), Check.SEAL)
    assert other.code == "seal_untrusted_key"
    assert other.message == "the seal was made with another key than the server's key"
    # Accepting an unsealed log is the caller's explicit choice.
    accepted = verify_export(entries, None, accept_unsealed=True)
    assert accepted.ok and accepted.outcomes[Check.SEAL] is Outcome.SKIPPED


def test_receipts_catch_a_log_rewritten_and_resealed() -> None:
    genuine = _copy(_genuine("hokm_4p"))
    receipts = [Receipt(e.event.seq, e.hash) for e in genuine]
    entries = _copy(genuine)
    index = _first(entries, "round_ended")
    entries[index].event.hokm.round_ended.scores[0] += 1
    forged = _rechained(entries)
    verification = _verify(forged, _sealed(forged), receipts)
    receipt = _only(verification, Check.RECEIPTS)
    assert (receipt.code, receipt.seq) == ("receipt_differs", index + 1)
    assert receipt.message.startswith(f"receipt for seq {index + 1}: the log's hash differs")
    assert verification.receipts_matched == index
    assert verification.summary(Check.RECEIPTS) == f"{index} of {len(receipts)} receipts match"


def test_random_corruption_is_reported_never_raised() -> None:
    """A hostile upload: any bytes that still parse give a verdict, never an exception."""
    rng = DeterministicRandom(b"audit-fuzz", "flips")
    genuine = _copy(_genuine("hokm_2p"))
    rejected = 0
    for _ in range(60):
        entries = _copy(genuine)
        target = entries[rng.randbelow(len(entries))]
        data = bytearray(target.event.SerializeToString())
        data[rng.randbelow(len(data))] ^= 1 << rng.randbelow(8)
        try:
            target.event.ParseFromString(bytes(data))
        except DecodeError:  # bytes that no longer parse are no log to audit
            continue
        verification = _verify(entries, _sealed(genuine))
        rejected += not verification.ok
        assert verification.ok == (entries == genuine)
    assert rejected >= 30
