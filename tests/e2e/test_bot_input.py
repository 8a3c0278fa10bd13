"""A bot's input is exactly its seat's view (docs/architecture.md "Bots": the same projection the
seat's player would see, never the full state)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc
import pytest

from dast.v1 import common_pb2, lobby_pb2
from engine import hokm
from services.bot import client, policies
from services.bot.client import GrpcGameApi
from services.bot.policies import SeatView
from services.bot.seats import LogSeats
from services.bot.service import BotService
from tests.e2e.helpers import Guest, stack
from tests.support.tokens import signer

pytestmark = pytest.mark.timeout(120)


async def test_the_bot_policy_gets_exactly_its_seats_view_as_the_play_stream_tells_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs: list[Any] = []
    seat_views: dict[int, SeatView] = {}
    basic = policies.POLICIES["hokm"]["basic"]

    def recording_policy(view: Any, rng: Any) -> Any:
        inputs.append(view)
        return basic(view, rng)

    def recording_decide(seat_view: SeatView, level: str, game_id: str) -> Any:
        seat_views[id(seat_view.view)] = seat_view
        return policies.decide(seat_view, level, game_id)

    monkeypatch.setitem(policies.POLICIES["hokm"], "basic", recording_policy)
    monkeypatch.setattr(client, "decide", recording_decide)
    async with stack(bots=False, timers=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        api = GrpcGameApi(channel, signer("bot"))
        bots = BotService(api, LogSeats())
        task = asyncio.create_task(bots.run(run.stack.bus))
        guest = await Guest.sign_in(channel, "device-bot-input")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM, target_score=3,
        ))
        bots.kick(table.game_id)
        await guest.play_to_the_end(table.game_id, level="greedy")  # not recorded
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        events = [e.event for e in await asyncio.to_thread(run.store.load, table.game_id, 0)]
    assert inputs, "the bots made no move"
    for view in inputs:
        # Each policy input is the view the stream told with the seat's turn …
        seat_view = seat_views[id(view)]
        seat = seat_view.turn
        assert seat is not None and view.seat == seat and not view.is_spectator
        # … and that message is the engine's projection for that seat at that seq.
        # (Beside the seats' names, which the service adds: the log records none.)
        state = hokm.replay(events[: seat_view.seq])
        unnamed = type(view)()
        unnamed.CopyFrom(view)
        for player in unnamed.players:
            player.ClearField("display_name")
            player.ClearField("deleted")
        assert unnamed == hokm.view(state, seat)
        # The projection hides the other seats' cards (the full state would not).
        assert len(view.hand) == view.hand_counts[seat]
