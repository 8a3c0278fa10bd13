"""A stack whose clock the test moves, and the players who talk on it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

import grpc

from dast.v1 import (
    chat_pb2,
    chat_pb2_grpc,
    common_pb2,
    hokm_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    reports_pb2_grpc,
)
from services.compose import Running, StackOptions, running_stack
from services.platform.auth import Role
from services.platform.limits import MACHINE_SPEED
from tests.support.tokens import TEST_KEYS, token

START_MS: Final = 1_800_000_000_000
DAY_MS: Final = 86_400_000


class MovedClock:
    """The services' clock, moved by the test."""

    def __init__(self) -> None:
        self.now_ms = START_MS

    def __call__(self) -> int:
        return self.now_ms

    def move(self, ms: int) -> None:
        self.now_ms += ms


@dataclass
class Person:
    """A player (or operator) calling the stack with their own token."""

    player_id: str
    channel: grpc.aio.Channel
    role: Role = Role.PLAYER

    @property
    def metadata(self) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {token(self.player_id, self.role)}"),)

    @property
    def chat(self) -> chat_pb2_grpc.ChatServiceStub:
        return chat_pb2_grpc.ChatServiceStub(self.channel)

    @property
    def lobby(self) -> lobby_pb2_grpc.LobbyServiceStub:
        return lobby_pb2_grpc.LobbyServiceStub(self.channel)

    @property
    def reports(self) -> reports_pb2_grpc.ReportServiceStub:
        return reports_pb2_grpc.ReportServiceStub(self.channel)

    async def host(self, *, spectators: bool = False, **settings: Any) -> lobby_pb2.Table:
        """A two-player Hokm table of theirs."""
        reply = await self.lobby.CreateTable(lobby_pb2.CreateTableRequest(
            settings=lobby_pb2.TableSettings(
                game_type=common_pb2.GAME_TYPE_HOKM, spectators_allowed=spectators,
                hokm=hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS),
                **settings)), metadata=self.metadata)
        table: lobby_pb2.Table = reply.table
        return table

    async def join(self, table: lobby_pb2.Table) -> None:
        await self.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table.table_id),
                                   metadata=self.metadata)

    async def say(self, table_id: str, text: str = "", *, phrase: str = "",
                  game_id: str = "") -> chat_pb2.ChatMessage:
        request = chat_pb2.SendChatRequest(table_id=table_id, game_id=game_id)
        if phrase:
            request.phrase_id = phrase
        else:
            request.text = text
        reply = await self.chat.SendChat(request, metadata=self.metadata, timeout=10)
        message: chat_pb2.ChatMessage = reply.message
        return message

    async def heard(self, table_id: str, count: int, *, after_seq: int = 0
                    ) -> list[chat_pb2.ChatMessage]:
        """The first ``count`` messages a watch of the table gives them."""
        heard: list[chat_pb2.ChatMessage] = []
        stream = self.chat.WatchChat(chat_pb2.WatchChatRequest(
            table_id=table_id, after_seq=after_seq), metadata=self.metadata)
        try:
            async for reply in stream:
                heard.append(reply.message)
                if len(heard) == count:
                    break
        finally:
            stream.cancel()
        return heard


class Listener:
    """A watch running in the background, collecting what it hears."""

    def __init__(self, person: Person, table_id: str) -> None:
        self.heard: list[chat_pb2.ChatMessage] = []
        self._stream = person.chat.WatchChat(chat_pb2.WatchChatRequest(table_id=table_id),
                                             metadata=person.metadata)
        self._task = asyncio.ensure_future(self._listen())

    async def _listen(self) -> None:
        async for reply in self._stream:
            self.heard.append(reply.message)

    async def stop(self) -> list[chat_pb2.ChatMessage]:
        self._stream.cancel()
        with contextlib.suppress(BaseException):
            await self._task
        return self.heard


async def settle(seconds: float = 0.3) -> None:
    """Let the messages sent reach the watches (and nothing more arrive)."""
    await asyncio.sleep(seconds)


@contextlib.asynccontextmanager
async def talking_stack(clock: MovedClock, *, nats_url: str | None = None,
                        deployment: str = "dast", **options: Any
                        ) -> AsyncIterator[tuple[Running, grpc.aio.Channel]]:
    """Every service on an in-memory store, on ``clock``; and a channel to it."""
    options = {"bots": False, "timers": False, "presence": False, **options}
    async with running_stack(TEST_KEYS, options=StackOptions(**options), clock=clock,
                             limits=MACHINE_SPEED, nats_url=nats_url,
                             deployment=deployment) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        yield run, channel
