"""A whole match whose player disconnects: the takeover is in the game's log, the bots play
the seat from that log alone, and the finished, sealed log passes the audit.

docs/rules/hokm.md "What the app adds": "a player who leaves mid-game is replaced by a bot".
"""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, lobby_pb2, log_pb2
from engine.core.audit import audit_log
from engine.core.seal import verify_seal
from tests.e2e.helpers import Guest, stack, wait_for

pytestmark = pytest.mark.timeout(120)


async def test_a_match_played_on_by_a_bot_after_a_disconnection_is_logged_and_audits() -> None:
    settings = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=3)
    async with stack(grace_ms=300) as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-seat-control-log", "Sara")
        table = await guest.table_with_bots(settings)
        game_id = table.game_id
        # The player watches, then the connection drops for good.
        stream = guest.game.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                      metadata=guest.metadata)
        await anext(aiter(stream))
        stream.cancel()

        async def over() -> bool:
            return (await guest.view(game_id)).is_over

        await wait_for(over, seconds=90, step=0.2)
        reply = await guest.call("ExportLog", game_pb2.ExportLogRequest(game_id=game_id))
        entries = list(reply.entries)
        # One takeover, for the player's seat, asked by the presence sweeper.
        controls = [e.event.seat_control for e in entries if e.event.HasField("seat_control")]
        assert len(controls) == 1
        assert (controls[0].seat, controls[0].bot) == (0, True)
        assert controls[0].reason == log_pb2.SEAT_CONTROL_REASON_DISCONNECTED
        assert controls[0].requested_by == "service:presence"
        # The bot's moves for the seat come after it and are marked automatic.
        taken_at = next(e.event.seq for e in entries if e.event.HasField("seat_control"))
        moves_of_seat_0 = [e.event for e in entries
                           if e.event.hokm.WhichOneof("kind") == "card_played"
                           and e.event.hokm.card_played.seat == 0]
        assert moves_of_seat_0 and all(m.automatic and m.seq > taken_at for m in moves_of_seat_0)
        # Replay and audit of the sealed log re-derive the takeover with every move.
        report = audit_log(entries)
        assert report.ok, report.problems
        assert reply.seal.head_hash == entries[-1].hash and verify_seal(reply.seal) is None
        # The lobby followed the event: its table says a bot took the seat.

        async def lobby_knows() -> bool:
            current = (await guest.call("GetTable", lobby_pb2.GetTableRequest(
                table_id=table.table_id))).table
            return bool(current.seats[0].taken_over_by_bot)

        await wait_for(lobby_knows)
