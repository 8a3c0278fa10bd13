"""Test clients of the play stack: a signed-in guest using the lobby and game services.

:meth:`Guest.sign_in` signs in through the lobby's retired device sign-in, which the test
stack (:func:`stack`) keeps on: the tests using it are about tables and matches, and the
lobby shows its own guests' display names at the tables. :meth:`Guest.sign_in_with_accounts`
signs in as apps do, through ``AccountsService``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    log_pb2,
)
from services.bot.policies import SeatView, decide
from services.compose import Running, StackOptions, running_stack
from services.platform.limits import MACHINE_SPEED
from tests.support.tokens import TEST_KEYS


@contextlib.asynccontextmanager
async def stack(**options: Any) -> AsyncIterator[Running]:
    """A play stack on an in-memory store (``store_url`` to persist) with test timings."""
    store_url = options.pop("store_url", None)
    limits = options.pop("limits", MACHINE_SPEED)  # the test clients play at machine speed
    options.setdefault("grace_ms", 300)
    options.setdefault("lobby_device_sign_in", True)  # for Guest.sign_in
    async with running_stack(TEST_KEYS, store_url=store_url, options=StackOptions(**options),
                             limits=limits) as run:
        yield run


@dataclass
class Guest:
    """A signed-in guest: lobby and game calls with its token."""

    channel: grpc.aio.Channel
    player_id: str = ""
    token: str = ""
    lobby: lobby_pb2_grpc.LobbyServiceStub = field(init=False)
    game: game_pb2_grpc.GameServiceStub = field(init=False)

    def __post_init__(self) -> None:
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self.game = game_pb2_grpc.GameServiceStub(self.channel)

    @classmethod
    async def sign_in(cls, channel: grpc.aio.Channel, device: str, name: str = "") -> Guest:
        guest = cls(channel)
        reply = await guest.lobby.SignInGuest(
            lobby_pb2.SignInGuestRequest(device_id=device, display_name=name)
        )
        guest.player_id, guest.token = reply.player_id, reply.token
        return guest

    @classmethod
    async def sign_in_with_accounts(cls, channel: grpc.aio.Channel, device: str,
                                    name: str = "") -> Guest:
        """A new guest of the accounts service (the device's first sign-in), as apps sign in."""
        guest = cls(channel)
        reply = await accounts_pb2_grpc.AccountsServiceStub(channel).SignInGuest(
            accounts_pb2.AccountsServiceSignInGuestRequest(device_id=device, display_name=name))
        guest.player_id, guest.token = reply.player_id, reply.tokens.access_token
        return guest

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    async def call(self, method: str, request: Any) -> Any:
        stub = self.lobby if hasattr(self.lobby, method) else self.game
        return await getattr(stub, method)(request, metadata=self.metadata, timeout=20)

    async def table_with_bots(self, settings: lobby_pb2.TableSettings) -> lobby_pb2.Table:
        """Create a table and start it at once (bots fill the other seats)."""
        table = (await self.call("CreateTable",
                                 lobby_pb2.CreateTableRequest(settings=settings))).table
        started: lobby_pb2.StartGameResponse = await self.call(
            "StartGame", lobby_pb2.StartGameRequest(table_id=table.table_id))
        return started.table

    async def view(self, game_id: str) -> SeatView:
        return SeatView.of(await self.call("GetView", game_pb2.GetViewRequest(game_id=game_id)))

    async def play_move(self, game_id: str, level: str = "basic") -> bool:
        """Play this guest's move if it is to act (the basic policy); True if it did."""
        seat_view = await self.view(game_id)
        if seat_view.turn != seat_view.view.seat or not seat_view.view.legal:
            return False
        command = decide(seat_view, level, game_id)
        request = game_pb2.SubmitCommandRequest(
            game_id=game_id, command_id=f"{self.player_id}:{seat_view.seq}",
            expected_seq=seat_view.seq,
        )
        getattr(request, seat_view.game).CopyFrom(command)
        try:
            await self.call("SubmitCommand", request)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.ABORTED:
                raise
        return True

    async def play_to_the_end(
        self, game_id: str, *, seconds: float = 120, level: str = "basic"
    ) -> SeatView:
        """Follow the game's stream and play every turn of this guest until the match ends."""
        events = self.game.Subscribe(
            game_pb2.SubscribeRequest(game_id=game_id), metadata=self.metadata
        )
        wake = asyncio.Event()

        async def follow() -> None:
            async for _ in events:
                wake.set()
            wake.set()

        follower = asyncio.create_task(follow())
        try:
            async with asyncio.timeout(seconds):
                while True:
                    wake.clear()
                    view = await self.view(game_id)
                    if view.is_over:
                        return view
                    if not await self.play_move(game_id, level):
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(wake.wait(), 0.5)
        finally:
            events.cancel()
            follower.cancel()
            with contextlib.suppress(BaseException):
                await follower

    async def log(self, game_id: str) -> list[log_pb2.Event]:
        reply = await self.call("ExportLog", game_pb2.ExportLogRequest(game_id=game_id))
        return [entry.event for entry in reply.entries]


async def wait_for(predicate: Any, *, seconds: float = 10, step: float = 0.05) -> Any:
    """Poll an async predicate until it returns something truthy."""
    async with asyncio.timeout(seconds):
        while True:
            value = await predicate()
            if value:
                return value
            await asyncio.sleep(step)
