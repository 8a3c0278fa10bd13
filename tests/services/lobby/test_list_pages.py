"""ListTables in pages: by table id, ``page_size`` tables a page (at most 500), a token for
the next; an admin's listing includes private tables (the operator console counts them)."""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import common_pb2, lobby_pb2, lobby_pb2_grpc
from services.platform.auth import Role
from services.platform.errors import reason_of
from tests.e2e.helpers import Guest, stack
from tests.support.tokens import bearer

pytestmark = pytest.mark.timeout(120)


async def _pages(lobby: lobby_pb2_grpc.LobbyServiceStub, metadata: object,
                 size: int) -> list[list[str]]:
    pages: list[list[str]] = []
    token = ""
    while True:
        reply = await lobby.ListTables(lobby_pb2.ListTablesRequest(
            include_playing=True, page_size=size, page_token=token), metadata=metadata)
        pages.append([table.table_id for table in reply.tables])
        token = reply.next_page_token
        if not token:
            return pages


async def test_tables_come_in_pages_and_admins_also_see_private_ones() -> None:
    async with stack(bots=False, timers=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        public: list[str] = []
        private: list[str] = []
        for number in range(5):
            host = await Guest.sign_in(channel, f"list-pages-{number}")
            table = (await host.call("CreateTable", lobby_pb2.CreateTableRequest(
                settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                                 private=number >= 3)))).table
            (private if number >= 3 else public).append(table.table_id)
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        player = bearer("p-lister", Role.PLAYER)
        assert await _pages(lobby, player, 2) == [sorted(public)[:2], sorted(public)[2:]]
        assert await _pages(lobby, player, 0) == [sorted(public)]
        everything = sorted(public + private)
        operator = bearer("operator-1", Role.ADMIN)
        assert await _pages(lobby, operator, 2) == [everything[:2], everything[2:4],
                                                    everything[4:]]
        for request in (lobby_pb2.ListTablesRequest(page_size=501),
                        lobby_pb2.ListTablesRequest(page_token="x" * 129),
                        lobby_pb2.ListTablesRequest(page_token="bad\x00token")):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await lobby.ListTables(request, metadata=player)
            assert (refused.value.code(), reason_of(refused.value)) == (
                grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
