"""``dast play --receipts``: the file a seat keeps (services/cli/play/receipts.py) holds each
receipt once, in the format ``dast verify --receipts`` loads, across reconnects and restarts."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from dast.v1 import log_pb2
from engine.core.logformat import Receipt, load_receipts
from services.cli.play.receipts import ReceiptsError, ReceiptsFile, receipts_path


def _digest(label: str) -> bytes:
    return hashlib.sha256(label.encode()).digest()


def test_a_replayed_stream_adds_nothing_and_the_verifier_reads_every_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "seat.jsonl"
    with ReceiptsFile(path) as receipts:
        assert [receipts.record(seq, _digest(f"h{seq}")) for seq in (1, 2, 3)] == [True] * 3
        # The stream reconnects from seq 1 and replays 2 and 3: nothing new.
        assert not receipts.record(2, _digest("h2")) and not receipts.record(3, _digest("h3"))
        # A SubmitCommand reply repeating what the stream sent, plus one new event.
        reply_events = [log_pb2.Event(seq=3), log_pb2.Event(seq=4)]
        assert receipts.record_reply(reply_events, [_digest("h3"), _digest("h4")]) == 1
        # No hash (a server from before receipts) and seq 0 are no receipts.
        assert not receipts.record(5, b"") and not receipts.record(0, _digest("h0"))
        assert receipts.count == 4
        # Each line is on disk as soon as it is recorded (a killed client keeps it).
        assert len(path.read_text().splitlines()) == 4
    assert load_receipts(path.read_text()) == [Receipt(seq, _digest(f"h{seq}"))
                                               for seq in (1, 2, 3, 4)]


def test_a_restarted_client_appends_only_what_it_had_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "seat.jsonl"
    with ReceiptsFile(path) as first_run:
        first_run.record(1, _digest("h1"))
    with ReceiptsFile(path) as second_run:
        assert second_run.count == 1
        assert not second_run.record(1, _digest("h1"))  # the restart replays the match
        assert second_run.record(2, _digest("h2"))
        # Another hash for a seq already kept is evidence against the server: kept too.
        assert second_run.record(1, _digest("forged"))
    assert [(r.seq, r.hash) for r in load_receipts(path.read_text())] == [
        (1, _digest("h1")), (2, _digest("h2")), (1, _digest("forged")),
    ]


def test_the_stream_thread_and_the_prompt_never_write_a_receipt_twice(tmp_path: Path) -> None:
    path = tmp_path / "seat.jsonl"
    with ReceiptsFile(path) as receipts:
        def send_all() -> None:
            for seq in range(1, 201):
                receipts.record(seq, _digest(f"h{seq}"))

        threads = [threading.Thread(target=send_all) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(r.seq for r in load_receipts(path.read_text())) == list(range(1, 201))


def test_a_closed_file_drops_late_receipts(tmp_path: Path) -> None:
    receipts = ReceiptsFile(tmp_path / "seat.jsonl")
    receipts.close()
    assert not receipts.record(1, _digest("h1"))  # the old match's stream thread, late
    assert (tmp_path / "seat.jsonl").read_text() == ""


def test_a_file_that_holds_something_else_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my shopping list\n")
    with pytest.raises(ReceiptsError, match="cannot keep receipts in"):
        ReceiptsFile(path)
    assert path.read_text() == "my shopping list\n"


def test_every_match_gets_a_file_of_its_own() -> None:
    assert receipts_path("r/{game}.jsonl", "g7", first_match=False) == Path("r/g7.jsonl")
    assert receipts_path("r/seat.jsonl", "g1", first_match=True) == Path("r/seat.jsonl")
    assert receipts_path("r/seat.jsonl", "g2", first_match=False) == Path("r/seat-g2.jsonl")
