"""Presence and turn timers over real gRPC: takeover and return, time-outs, restarts.

docs/rules/hokm.md "What the app adds": "on time-out the seat's bot plays for it"; "a player who
leaves mid-game is replaced by a bot …; a player who comes back takes the seat back".
docs/architecture.md "Time": the automatic move is an ordinary command marked automatic.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, lobby_pb2, log_pb2
from tests.e2e.helpers import Guest, stack, wait_for

pytestmark = pytest.mark.timeout(120)

HOKM_4 = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=3)


def _automatic_moves_of(events: list[log_pb2.Event], seat: int) -> list[log_pb2.Event]:
    moves = []
    for event in events:
        kind = event.hokm.WhichOneof("kind")
        played = kind in ("card_played", "trump_declared")
        if event.automatic and played and kind and getattr(event.hokm, kind).seat == seat:
            moves.append(event)
    return moves


async def test_a_disconnected_player_is_replaced_by_a_bot_and_gets_the_seat_back() -> None:
    async with stack(grace_ms=300) as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-presence", "Reza")
        table = await guest.table_with_bots(HOKM_4)
        game_id = table.game_id
        updates: list[lobby_pb2.TableUpdate] = []

        async def watch() -> None:
            stream = guest.lobby.WatchTable(
                lobby_pb2.WatchTableRequest(table_id=table.table_id), metadata=guest.metadata
            )
            async for message in stream:
                updates.append(message.update)

        watcher = asyncio.create_task(watch())
        # The player watches the game, then the connection drops.
        stream = guest.game.Subscribe(
            game_pb2.SubscribeRequest(game_id=game_id), metadata=guest.metadata
        )
        await anext(aiter(stream))
        stream.cancel()

        async def taken_over() -> bool:
            current = await guest.call(
                "GetTable", lobby_pb2.GetTableRequest(table_id=table.table_id)
            )
            return bool(current.table.seats[0].taken_over_by_bot)

        await wait_for(taken_over, seconds=10)
        # The bot plays the absent player's seat; its moves are logged as automatic (read from
        # the store: a player may export only finished logs).

        async def bot_moved_for_player() -> bool:
            entries = await asyncio.to_thread(run.store.load, game_id, 0)
            return bool(_automatic_moves_of([e.event for e in entries], 0))

        await wait_for(bot_moved_for_player, seconds=20)
        # The player comes back: a new stream gives the seat back.
        back = guest.game.Subscribe(
            game_pb2.SubscribeRequest(game_id=game_id), metadata=guest.metadata
        )
        await anext(aiter(back))
        await wait_for(lambda: _not(taken_over), seconds=10)
        await asyncio.sleep(0.3)  # a bot move decided just before the return may still land

        # From now on nobody moves for the player: the game waits at its turn.
        async def players_turn() -> bool:
            view = await guest.view(game_id)
            return view.turn == 0 or view.is_over

        await wait_for(players_turn, seconds=20)
        waiting = await guest.view(game_id)
        await asyncio.sleep(0.6)
        assert (await guest.view(game_id)).seq == waiting.seq or waiting.is_over
        back.cancel()
        kinds = [update.kind for update in updates]
        assert lobby_pb2.TABLE_UPDATE_KIND_SEAT_TAKEN_OVER_BY_BOT in kinds
        assert lobby_pb2.TABLE_UPDATE_KIND_SEAT_RETURNED in kinds
        taken = next(u for u in updates
                     if u.kind == lobby_pb2.TABLE_UPDATE_KIND_SEAT_TAKEN_OVER_BY_BOT)
        assert (taken.seat, taken.player_id) == (0, guest.player_id)
        watcher.cancel()
        with contextlib.suppress(BaseException):
            await watcher


@pytest.mark.parametrize("comes_back", [False, True])
async def test_a_player_away_when_the_match_ends_is_not_carried_into_the_rematch(
    comes_back: bool,
) -> None:
    # Carried along, the absent player's next match would be played by a bot in their name
    # and rated as abandoned; back in time, they take the seat again by joining the table.
    async with stack(grace_ms=300) as run, grpc.aio.insecure_channel(run.address) as channel:
        host = await Guest.sign_in(channel, f"device-rematch-host-{comes_back}", "Host")
        friend = await Guest.sign_in(channel, f"device-rematch-friend-{comes_back}", "Friend")
        table = (await host.call("CreateTable",
                                 lobby_pb2.CreateTableRequest(settings=HOKM_4))).table
        get_table = lobby_pb2.GetTableRequest(table_id=table.table_id)
        rematch = lobby_pb2.RematchRequest(table_id=table.table_id)
        await friend.call("JoinTable", lobby_pb2.JoinTableRequest(table_id=table.table_id,
                                                                  seat=2))
        started = (await host.call("StartGame", lobby_pb2.StartGameRequest(
            table_id=table.table_id))).table
        stream = friend.game.Subscribe(
            game_pb2.SubscribeRequest(game_id=started.game_id), metadata=friend.metadata)
        await anext(aiter(stream))
        stream.cancel()  # the friend's connection drops for the rest of the match

        async def friend_taken_over() -> bool:
            return bool((await host.call("GetTable", get_table)).table.seats[2].taken_over_by_bot)

        await wait_for(friend_taken_over, seconds=10)
        await host.play_to_the_end(started.game_id)

        async def finished() -> lobby_pb2.Table | None:
            current = (await host.call("GetTable", get_table)).table
            return current if current.status == lobby_pb2.TABLE_STATUS_FINISHED else None

        ended = await wait_for(finished, seconds=20)
        assert ended.seats[2].player_id == friend.player_id and ended.seats[2].taken_over_by_bot
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await friend.call("Rematch", rematch)
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "join the table again" in (refused.value.details() or "")
        if comes_back:
            back = (await friend.call("JoinTable", lobby_pb2.JoinTableRequest(
                table_id=table.table_id))).table
            assert back.seats[2].player_id == friend.player_id
            assert not back.seats[2].taken_over_by_bot
            again = (await friend.call("Rematch", rematch)).table
            assert again.seats[2].player_id == friend.player_id and not again.seats[2].is_bot
            assert (await friend.view(again.game_id)).view.seat == 2
            return
        again = (await host.call("Rematch", rematch)).table
        assert again.status == lobby_pb2.TABLE_STATUS_PLAYING and again.seats[2].is_bot
        assert friend.player_id not in [seat.player_id for seat in again.seats]
        try:
            seen = await friend.call("GetView", game_pb2.GetViewRequest(game_id=again.game_id))
        except grpc.aio.AioRpcError as not_seated:
            assert not_seated.code() == grpc.StatusCode.PERMISSION_DENIED
        else:
            assert seen.hokm.is_spectator  # the match has no seat of the friend's


async def _not(predicate: object) -> bool:
    return not await predicate()  # type: ignore[operator]


@pytest.mark.parametrize("game", ["hokm", "hand"])
async def test_a_turn_that_runs_out_is_played_by_the_bot_and_logged_automatic(game: str) -> None:
    # turn_seconds 15; the timer's shift makes the 15 s run out after ~0.2 s. The guest
    # never subscribes, so no presence takeover is involved: only the timer moves for it.
    async with stack(timer_shift_ms=-14_800) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, f"device-timeout-{game}")
        settings = lobby_pb2.TableSettings()
        if game == "hokm":
            settings.CopyFrom(HOKM_4)
        else:
            settings.game_type = common_pb2.GAME_TYPE_HAND
            settings.hand.players = 2
        settings.turn_seconds = 15
        table = await guest.table_with_bots(settings)

        async def timed_out() -> list[log_pb2.Event]:
            entries = await asyncio.to_thread(run.store.load, table.game_id, 0)
            return [e.event for e in entries if e.event.automatic]

        moves = await wait_for(timed_out, seconds=20)
        timers = run.stack.timers
        assert timers is not None

        async def counted() -> bool:
            return timers.fired >= 1  # counted once the submit's reply is back

        await wait_for(counted)
        # Only the guest's seat (0) was ever played automatically.
        assert {_actor(e) for e in moves} - {None} == {0}
        if game == "hand":
            # A timed-out Hand turn is played whole: the draw and the discard that ends it.
            async def discarded() -> bool:
                entries = await asyncio.to_thread(run.store.load, table.game_id, 0)
                return any(e.event.automatic and e.event.hand.HasField("card_discarded")
                           for e in entries)

            await wait_for(discarded)


_ACTS = ("card_played", "trump_declared", "card_drawn", "card_discarded", "melds_laid",
         "card_laid_off", "joker_retrieved")


def _actor(event: log_pb2.Event) -> int | None:
    """The seat whose command produced ``event``, for the events naming it."""
    payload = event.hokm if event.WhichOneof("game") == "hokm" else event.hand
    kind = payload.WhichOneof("kind")
    return getattr(payload, kind).seat if kind in _ACTS else None


async def test_a_player_who_leaves_mid_game_is_replaced_and_may_come_back() -> None:
    # docs/rules/hokm.md "What the app adds": leaving mid-game, a bot plays for the player.
    async with stack() as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-leave")
        table = await guest.table_with_bots(HOKM_4)
        left = (await guest.call("LeaveTable", lobby_pb2.LeaveTableRequest(
            table_id=table.table_id))).table
        assert left.seats[0].taken_over_by_bot and left.seats[0].left

        async def bot_moved_for_player() -> bool:
            entries = await asyncio.to_thread(run.store.load, table.game_id, 0)
            return bool(_automatic_moves_of([e.event for e in entries], 0))

        await wait_for(bot_moved_for_player, seconds=20)
        back = (await guest.call("JoinTable", lobby_pb2.JoinTableRequest(
            table_id=table.table_id))).table
        assert not back.seats[0].taken_over_by_bot and not back.seats[0].left


async def test_a_timer_pending_when_the_service_dies_fires_after_restart(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'dast.sqlite3'}"
    settings = lobby_pb2.TableSettings()
    settings.CopyFrom(HOKM_4)
    settings.turn_seconds = 15
    # First life: the deadline of the player's turn is 15 s away when the process stops.
    async with stack(store_url=store_url) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-restart")
        table = await guest.table_with_bots(settings)

        async def players_turn() -> bool:
            return (await guest.view(table.game_id)).turn == 0

        await wait_for(players_turn, seconds=20)
        assert run.stack.timers is not None and table.game_id in run.stack.timers.pending
        pending_seq = (await guest.view(table.game_id)).seq
    # Second life, on the same store: the rebuilt timer fires (now past its shifted time).
    async with stack(store_url=store_url, timer_shift_ms=-15_000) as run:
        async def fired() -> bool:
            entries = await asyncio.to_thread(run.store.load, table.game_id, pending_seq)
            return any(e.event.automatic for e in entries)

        await wait_for(fired, seconds=20)
        entries = await asyncio.to_thread(run.store.load, table.game_id, pending_seq)
        assert entries[0].event.automatic  # the very next event is the automatic move
