"""docs/examples/play_hokm.py, the worked example of docs/clients.md, run for real against
an embedded server: it must play a whole match, reconnect once, and keep true receipts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import grpc

from dast.v1 import game_pb2, hokm_pb2
from engine.core.logformat import load_receipts
from tests.e2e.helpers import Guest, stack
from tests.support.tokens import token

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "play_hokm.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("play_hokm_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


async def test_the_example_plays_a_match_to_the_end_reconnecting_once(tmp_path: Path) -> None:
    example = load_example()
    async with stack() as run:
        record = await example.play_hokm(run.address, device_id="client-guide-example")
        async with grpc.aio.insecure_channel(run.address) as channel:
            # the example's own player, with a token of the test's keys
            guest = Guest(channel, record.player_id, token(record.player_id))
            exported = await guest.call(
                "ExportLog", game_pb2.ExportLogRequest(game_id=record.game_id))

    view = record.final_view
    assert view is not None
    assert view.phase == hokm_pb2.HOKM_PHASE_MATCH_OVER
    assert len(view.winners) == 2 and max(view.scores) >= 3
    assert record.reconnections == 1 and record.moves_played > 0
    # The stream said whose turn it was: one GetView per connection, none per event.
    assert record.get_views == record.reconnections + 1
    # Every event once, in order, across the reconnection; each receipt is the log's hash.
    log_hashes = {entry.event.seq: bytes(entry.hash) for entry in exported.entries}
    assert [seq for seq, _ in record.receipts] == list(range(1, len(log_hashes) + 1))
    assert all(log_hashes[seq] == digest for seq, digest in record.receipts)
    assert exported.seal.signature
    assert record.clock.uncertainty_ms < 5_000

    receipts = tmp_path / "receipts.jsonl"
    record.write_receipts(receipts)
    assert len(load_receipts(receipts.read_text(encoding="utf-8"))) == len(record.receipts)
