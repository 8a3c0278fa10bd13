"""A third game, known only to the tests, played end to end with no change to any service.

The tiny trick game (tests/support/tiny) is registered through ``engine.registry.register``
alone; the lobby creates its table and quick match, the bots fill its seats, the timer plays
for the seat that never acts, the game service runs the match, and its exported log passes
the audit. Nothing in ``services/`` knows the game: all they learn comes from its module.
"""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import game_pb2, lobby_pb2
from engine.core.audit import audit_log
from engine.core.payload import unpack
from engine.core.seal import verify_seal
from tests.e2e.helpers import Guest, stack, wait_for
from tests.support.tiny import game as tiny
from tests.support.tiny import tiny_pb2
from tests.support.tiny.registered import tiny_registered

pytestmark = pytest.mark.timeout(90)


def _tiny_settings(players: int) -> lobby_pb2.TableSettings:
    settings = lobby_pb2.TableSettings(game_type=tiny.GAME_TYPE, target_score=3,  # type: ignore[arg-type]
                                       turn_seconds=15)
    settings.other.Pack(tiny_pb2.TinyRules(players=players))
    return settings


async def test_lobby_bots_timers_and_game_service_play_a_registered_game() -> None:
    # A 15-second turn runs out 0.25 s after it starts; presence is off, so only the timer
    # ever plays for the host, who never acts.
    with tiny_registered():
        async with stack(presence=False, timer_shift_ms=-14_750) as run, \
                grpc.aio.insecure_channel(run.address) as channel:
            host = await Guest.sign_in(channel, "device-tiny-host", "Host")
            table = await host.table_with_bots(_tiny_settings(3))
            assert table.status == lobby_pb2.TABLE_STATUS_PLAYING
            assert [seat.is_bot for seat in table.seats] == [False, True, True]

            async def finished() -> bool:
                return (await host.view(table.game_id)).is_over

            await wait_for(finished, seconds=60)
            final = await host.view(table.game_id)
            assert final.game == "tiny" and max(final.view.scores) == 3

            # The exported log is the tiny game's, sealed, and passes the audit.
            exported = await host.call("ExportLog", game_pb2.ExportLogRequest(
                game_id=table.game_id))
            assert exported.game_type == tiny.GAME_TYPE
            report = audit_log(list(exported.entries))
            assert report.ok, report.problems
            key = await host.call("GetSigningKey", game_pb2.GetSigningKeyRequest())
            assert verify_seal(exported.seal, key.public_key) is None
            assert exported.seal.head_hash == exported.entries[-1].hash
            # The timer played every card of the seat that never acted, marked automatic.
            host_cards = [
                entry.event for entry in exported.entries
                if unpack(entry.event.other, tiny_pb2.TinyEvent).WhichOneof("kind")
                == "card_played"
                and unpack(entry.event.other, tiny_pb2.TinyEvent).card_played.seat == 0
            ]
            assert host_cards and all(event.automatic for event in host_cards)

            # The lobby saw the match end.
            async def table_finished() -> bool:
                shown = (await host.call("GetTable", lobby_pb2.GetTableRequest(
                    table_id=table.table_id))).table
                return bool(shown.status == lobby_pb2.TABLE_STATUS_FINISHED)

            await wait_for(table_finished, seconds=20)


async def test_quick_match_and_settings_come_from_the_registered_game() -> None:
    with tiny_registered():
        async with stack(timers=False, bots=False, presence=False) as run, \
                grpc.aio.insecure_channel(run.address) as channel:
            guest = await Guest.sign_in(channel, "device-tiny-quick")
            quick = (await guest.call("QuickMatch", lobby_pb2.QuickMatchRequest(
                game_type=tiny.GAME_TYPE, players=2))).table  # type: ignore[arg-type]
            assert len(quick.seats) == 2
            assert unpack(quick.settings.other, tiny_pb2.TinyRules).players == 2
            # A count the game does not have is refused with the lobby's reason.
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await guest.call("CreateTable", lobby_pb2.CreateTableRequest(
                    settings=_tiny_settings(4)))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Once unregistered, the game's number is unknown again, at the edge.
    async with stack(timers=False, bots=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-tiny-gone")
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await guest.call("CreateTable", lobby_pb2.CreateTableRequest(
                settings=_tiny_settings(3)))
        assert unknown.value.code() == grpc.StatusCode.INVALID_ARGUMENT
