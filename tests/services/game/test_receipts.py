"""Receipts and seals through gRPC (game.proto): every hash a seat is sent, on its stream
and in its SubmitCommand replies, is the hash of the exported log at that seq; the export
of a finished match is sealed with the key GetSigningKey serves; ``dast verify`` accepts
the export (fetched by ``dast export``) together with a seat's saved stream."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import grpc
from google.protobuf import json_format
from typer.testing import CliRunner

from dast.v1 import common_pb2, game_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.audit import audit_log
from engine.core.logformat import dump_jsonl
from engine.core.seal import seal_covers, verify_seal
from engine.core.testing import play_match
from engine.hokm.bots import BOTS
from services.cli import app
from services.platform.auth import Role
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import players
from tests.support.tokens import token

RULES = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=1)
SEED = bytes(range(32))


def _commands() -> list[log_pb2.Command]:
    """The moves of a whole two-player match from ``SEED``, worked out locally: with the
    same server seed the service deals the same cards, so they stay legal there."""
    events = play_match(hokm, RULES, SEED, players(2), [BOTS["greedy"]] * 2, 4)
    return [command for e in events if (command := hokm.command_for(e)) is not None]


async def _stream(embedded: Embedded, player: str, game_id: str,
                  sink: list[game_pb2.SubscribeResponse]) -> None:
    client = embedded.client(player)
    call = client.stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                 metadata=client.metadata)
    async for reply in call:
        sink.append(reply)


async def test_every_hash_a_seat_is_sent_is_the_exported_logs_and_the_export_is_sealed(
    embedded: Embedded, tmp_path: Path
) -> None:
    admin = embedded.client("ops", Role.ADMIN)
    request = game_pb2.CreateGameRequest(game_type=common_pb2.GAME_TYPE_HOKM, hokm=RULES,
                                         players=players(2), server_seed=SEED)
    game_id = (await admin.create(request)).game_id
    streams: dict[int, list[game_pb2.SubscribeResponse]] = {0: [], 1: []}
    tasks = [asyncio.create_task(_stream(embedded, f"p{seat}", game_id, streams[seat]))
             for seat in streams]
    submitted: dict[int, bytes] = {}
    seats = [embedded.client(f"p{seat}") for seat in range(2)]
    for number, command in enumerate(_commands()):
        reply = await seats[command.seat].submit(game_id, f"c{number}", command.hokm)
        assert len(reply.hashes) == len(reply.events) > 0
        submitted.update((e.seq, h) for e, h in zip(reply.events, reply.hashes, strict=True))
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)

    export = await seats[0].stub.ExportLog(game_pb2.ExportLogRequest(game_id=game_id),
                                           metadata=seats[0].metadata)
    exported = {entry.event.seq: entry.hash for entry in export.entries}
    for seat, replies in streams.items():
        assert {r.event.seq: r.hash for r in replies} == exported, f"seat {seat}'s stream"
    assert submitted.items() <= exported.items()

    # The seal is over the log's head, under the key the server serves to anyone.
    key = await seats[1].stub.GetSigningKey(game_pb2.GetSigningKeyRequest(),
                                            metadata=seats[1].metadata)
    assert key.algorithm == "ed25519" and export.seal.public_key == key.public_key
    assert seal_covers(export.seal, export.entries) and export.seal.game_id == game_id
    assert verify_seal(export.seal, key.public_key) is None
    report = audit_log(export.entries)
    assert report.ok and report.server_seed_chosen, report.problems

    # What a seat keeps (its stream as received) verifies the export from the outside;
    # `dast export` and `dast signing-key` fetch the rest (run in a thread: they run a loop).
    log_file, receipts = tmp_path / "game.jsonl", tmp_path / "seat1.jsonl"
    receipts.write_text("".join(json_format.MessageToJson(r, indent=None) + "\n"
                                for r in streams[1]))
    cli = ["--server", embedded.address, "--token", token("p1")]
    exported_cli = await asyncio.to_thread(
        CliRunner().invoke, app, ["export", game_id, "-o", str(log_file), *cli])
    assert exported_cli.exit_code == 0 and "sealed" in exported_cli.output, exported_cli.output
    assert log_file.read_text() == dump_jsonl(export.entries, export.seal)
    served_key = await asyncio.to_thread(CliRunner().invoke, app, ["signing-key", *cli])
    assert served_key.output.strip() == base64.b64encode(key.public_key).decode()
    result = CliRunner().invoke(app, [
        "verify", str(log_file), "--receipts", str(receipts),
        "--public-key", served_key.output.strip(),
    ])
    assert result.exit_code == 0, result.output
    assert "an admin chose this match's server seed" in result.output


async def test_an_unfinished_export_is_not_sealed_and_the_key_needs_a_token(
    embedded: Embedded,
) -> None:
    admin = embedded.client("ops", Role.ADMIN)
    request = game_pb2.CreateGameRequest(game_type=common_pb2.GAME_TYPE_HOKM, hokm=RULES,
                                         players=players(2))
    game_id = (await admin.create(request)).game_id
    export = await admin.stub.ExportLog(game_pb2.ExportLogRequest(game_id=game_id),
                                        metadata=admin.metadata)
    assert export.entries and not export.HasField("seal")
    assert not audit_log(export.entries).server_seed_chosen
    stub = embedded.client("nobody").stub
    try:
        await stub.GetSigningKey(game_pb2.GetSigningKeyRequest())
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    else:
        raise AssertionError("GetSigningKey answered a caller without a token")
