"""The seal over a log's head (engine/core/seal.py) and the export and receipts formats
(engine/core/logformat.py)."""

from __future__ import annotations

import base64
import json
import struct

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from google.protobuf import json_format

from dast.v1 import game_pb2, log_pb2
from engine.core.audit import Check
from engine.core.chain import chain_log
from engine.core.logformat import (
    LogFormatError,
    Receipt,
    dump_jsonl,
    load_jsonl,
    load_log,
    load_receipts,
)
from engine.core.seal import SealProblem, seal_covers, seal_message, verify_seal
from engine.core.verification import verify_export


def _raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _seal(key: Ed25519PrivateKey, game_id: str, entry: log_pb2.LogEntry) -> log_pb2.LogSeal:
    message = seal_message(game_id, entry.event.seq, entry.hash)
    return log_pb2.LogSeal(game_id=game_id, seq=entry.event.seq, head_hash=entry.hash,
                           public_key=_raw(key), signature=key.sign(message))


ENTRIES = chain_log([log_pb2.Event(seq=seq, at_ms=seq) for seq in (1, 2, 3)])


def test_the_signed_message_is_the_documented_byte_string() -> None:
    head = bytes(range(32))
    expected = b"dast/log-seal/v1\x00" + struct.pack(">I", 2) + b"g7" + struct.pack(">Q", 9)
    assert seal_message("g7", 9, head) == expected + head


def test_a_seal_verifies_under_its_key_and_the_trusted_one() -> None:
    key = Ed25519PrivateKey.generate()
    seal = _seal(key, "g1", ENTRIES[-1])
    assert verify_seal(seal) is None
    assert verify_seal(seal, _raw(key)) is None
    assert seal_covers(seal, ENTRIES)
    assert not seal_covers(seal, ENTRIES[:-1])


def test_a_seal_made_with_another_key_is_not_trusted() -> None:
    seal = _seal(Ed25519PrivateKey.generate(), "g1", ENTRIES[-1])
    trusted = _raw(Ed25519PrivateKey.generate())
    assert verify_seal(seal, trusted) is SealProblem.UNTRUSTED_KEY


def test_an_untrusted_seal_names_both_keys() -> None:
    # It once said "expected , found key …": the key it wanted was missing.
    made_with, trusted = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    seal = _seal(made_with, "g1", ENTRIES[-1])
    verification = verify_export(ENTRIES, seal, trusted_key=_raw(trusted),
                                 trusted_key_name="the server's key", accept_unsealed=True)
    (finding,) = [f for f in verification.findings if f.check is Check.SEAL]
    assert finding.code == SealProblem.UNTRUSTED_KEY
    assert finding.expected == f"key {base64.b64encode(_raw(trusted)).decode()}"
    assert finding.found == f"key {base64.b64encode(_raw(made_with)).decode()}"
    assert str(finding) == (f"the seal was made with another key than the server's key "
                            f"(expected {finding.expected}, found {finding.found})")


def test_a_seal_moved_to_another_game_seq_or_head_fails() -> None:
    key = Ed25519PrivateKey.generate()
    seal = _seal(key, "g1", ENTRIES[-1])
    for field, value in (("game_id", "g2"), ("seq", 2), ("head_hash", ENTRIES[1].hash)):
        moved = log_pb2.LogSeal()
        moved.CopyFrom(seal)
        setattr(moved, field, value)
        assert verify_seal(moved) is SealProblem.BAD_SIGNATURE, field
    truncated = log_pb2.LogSeal()
    truncated.CopyFrom(seal)
    truncated.signature = seal.signature[:10]
    assert verify_seal(truncated) is SealProblem.MALFORMED


def test_a_sealed_export_round_trips_and_old_exports_still_load() -> None:
    seal = _seal(Ed25519PrivateKey.generate(), "g1", ENTRIES[-1])
    text = dump_jsonl(ENTRIES, seal)
    assert json.loads(text.splitlines()[-1]).keys() == {"seal"}
    loaded = load_log(text)
    assert loaded.entries == ENTRIES and loaded.seal == seal
    assert load_jsonl(text) == ENTRIES
    old = dump_jsonl(ENTRIES)
    assert load_log(old).seal is None and load_log(old).entries == ENTRIES


def test_nothing_may_follow_the_seal() -> None:
    seal = _seal(Ed25519PrivateKey.generate(), "g1", ENTRIES[-1])
    text = dump_jsonl(ENTRIES[:2], seal) + dump_jsonl(ENTRIES[2:])
    with pytest.raises(LogFormatError, match="line 4 follows the seal"):
        load_log(text)


def test_receipts_load_from_pairs_and_from_saved_subscribe_replies() -> None:
    pair = json.dumps({"seq": 1, "hash": base64.b64encode(ENTRIES[0].hash).decode()})
    reply = game_pb2.SubscribeResponse(event=ENTRIES[1].event, hash=ENTRIES[1].hash)
    saved = json_format.MessageToJson(reply, indent=None)
    assert load_receipts(f"{pair}\n\n{saved}\n") == [
        Receipt(1, ENTRIES[0].hash), Receipt(2, ENTRIES[1].hash)
    ]


@pytest.mark.parametrize("line", [
    "[1, 2]", '{"seq": 1}', '{"seq": 0, "hash": "AAAA"}', '{"seq": 1, "hash": "AAAA"}',
    '{"seq": "x", "hash": ""}', "not json",
])
def test_malformed_receipts_name_their_line(line: str) -> None:
    with pytest.raises(LogFormatError, match="line 1 is not a receipt"):
        load_receipts(line + "\n")


def _hokm_export() -> str:
    from dast.v1 import hokm_pb2
    from engine import hokm
    from engine.core.budget import Budget
    from engine.core.testing import play_bots
    from engine.hokm.expert import DEFAULT_SAMPLES

    policies = hokm.bot_policies(Budget(DEFAULT_SAMPLES))  # what make_expert does with None
    log = play_bots(hokm, policies, hokm_pb2.HokmRules(target_score=1),
                    b"s" * 32, ["random"] * 4, 0, at_ms=1)
    return dump_jsonl(chain_log(log))


@pytest.mark.parametrize(("field", "bad"), [
    ("hash", "!"), ("hash", " "), ("hash", "\u00e9"),
    ("serverSeedCommitment", "*"), ("serverSeed", "%"),
])
def test_a_bytes_field_with_a_character_outside_base64_is_refused(field: str, bad: str) -> None:
    """protobuf's own JSON parser skips such characters, so an edited file would read as the
    untouched log: the export format refuses it, naming the field."""
    text = _hokm_export()
    assert load_log(text).entries  # untouched: reads
    first, rest = text.split("\n", 1)
    key = f'"{field}": "'
    at = first.index(key) + len(key) + 4
    edited = first[:at] + bad + first[at:] + "\n" + rest
    with pytest.raises(LogFormatError, match=f"line 1 .*{field} is not base64"):
        load_log(edited)


def test_url_safe_and_unpadded_base64_still_read() -> None:
    entry = ENTRIES[0]
    line = json.loads(json_format.MessageToJson(entry, indent=None))
    standard = line["hash"]
    line["hash"] = base64.urlsafe_b64encode(base64.b64decode(standard)).decode().rstrip("=")
    assert load_jsonl(json.dumps(line) + "\n")[0].hash == entry.hash


def test_a_seal_whose_signature_is_not_base64_is_refused() -> None:
    key = Ed25519PrivateKey.generate()
    text = dump_jsonl(ENTRIES, _seal(key, "g1", ENTRIES[-1]))
    lines = text.splitlines()
    seal = json.loads(lines[-1])
    seal["seal"]["signature"] = "#" + seal["seal"]["signature"]
    lines[-1] = json.dumps(seal)
    with pytest.raises(LogFormatError, match=r"seal\.signature is not base64"):
        load_log("\n".join(lines) + "\n")
