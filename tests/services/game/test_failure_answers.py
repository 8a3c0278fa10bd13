"""How the game service answers a failing call (services/game/service.py ``_rpc``,
``_streaming_rpc``): one mapping for every method, the request's game id in the log of an
unexpected failure, and SubmitCommand's refusals counted, timed and logged."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from dast.v1 import common_pb2, game_pb2, hokm_pb2
from services.game import service as game_service
from services.platform import errors
from services.platform.auth import Role
from services.platform.errors import error_info_of, reason_of
from services.platform.metrics import GameMetrics
from services.platform.validation import quoted_input
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import players
from tests.services.game.test_errors import new_game

STORE_TROUBLE = "connection to the event store lost: host db-7 port 5432"


class Recorder:
    """Stands in for a module's structlog logger: keeps what it was asked to log."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def _record(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))

    info = debug = error = _record

    def named(self, event: str) -> list[dict[str, Any]]:
        return [fields for name, fields in self.lines if name == event]


class RecordingPresence:
    """A :class:`services.platform.presence_kv.StreamPresence` that keeps its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def opened(self, game_id: str, player_id: str) -> None:
        self.calls.append(("opened", game_id, player_id))

    def closed(self, game_id: str, player_id: str) -> None:
        self.calls.append(("closed", game_id, player_id))


async def _failure(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


def _play(card: int) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=card))


async def test_a_refused_command_is_counted_timed_and_logged(
    embedded: Embedded, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = CollectorRegistry()
    embedded.service.metrics = GameMetrics(registry)
    log = Recorder()
    monkeypatch.setattr(game_service, "_log", log)
    player = embedded.client("p0")

    error = await _failure(player.submit("no-such-game", "c1", _play(3), expected_seq=7))

    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert reason_of(error) == "game_not_found"
    assert error.details() == "no game 'no-such-game'"
    assert registry.get_sample_value(
        "dast_commands_total", {"game": "hokm", "outcome": "not_found"}
    ) == 1
    assert registry.get_sample_value("dast_command_seconds_count", {"game": "hokm"}) == 1
    assert log.named("command_refused") == [{
        "game_id": "no-such-game", "expected_seq": 7,
        "status": "NOT_FOUND", "reason": "game_not_found",
    }]


async def test_an_unexpected_failure_is_internal_with_a_ref_logged_with_the_game_id(
    embedded: Embedded, monkeypatch: pytest.MonkeyPatch
) -> None:
    game_id, clients = await new_game(embedded)
    registry = CollectorRegistry()
    embedded.service.metrics = GameMetrics(registry)
    internal_log, service_log = Recorder(), Recorder()
    monkeypatch.setattr(errors, "_log", internal_log)
    monkeypatch.setattr(game_service, "_log", service_log)

    async def store_down(*_: object) -> Any:
        raise ConnectionError(STORE_TROUBLE)

    monkeypatch.setattr(embedded.service.repository, "refresh", store_down)
    monkeypatch.setattr(embedded.service.commands, "submit", store_down)

    async def first_event() -> None:
        async for _ in clients[0].subscribe(game_id):
            return

    failures = [
        await _failure(clients[0].view(game_id)),
        await _failure(first_event()),
        await _failure(clients[0].submit(game_id, "c1", _play(3))),
    ]
    logged = internal_log.named("internal_error")
    assert len(logged) == len(failures)
    for error, line in zip(failures, logged, strict=True):
        info = error_info_of(error)
        assert error.code() == grpc.StatusCode.INTERNAL
        assert info is not None and info.reason == "ERROR_REASON_INTERNAL"
        assert error.details() == f"internal error (ref {info.metadata['ref']})"
        assert STORE_TROUBLE not in error.details()
        assert (line["ref"], line["game_id"], line["error_type"]) == (
            info.metadata["ref"], game_id, "ConnectionError"
        )
    assert registry.get_sample_value(
        "dast_commands_total", {"game": "hokm", "outcome": "internal"}
    ) == 1
    assert [(line["status"], line["reason"]) for line in service_log.named("command_refused")] \
        == [("INTERNAL", "internal")]


async def test_an_existing_game_id_is_already_exists_naming_the_requested_id(
    embedded: Embedded,
) -> None:
    game_id, _ = await new_game(embedded)
    lobby = embedded.client("lobby", Role.SERVICE)
    error = await _failure(lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, players=players(4), game_id=game_id
    )))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    assert reason_of(error) == "game_exists"
    assert error.details() == f"game {quoted_input(game_id)} exists"  # a short prefix


async def test_a_stream_the_client_cancels_tells_presence_it_closed(
    embedded: Embedded,
) -> None:
    game_id, clients = await new_game(embedded)
    presence = RecordingPresence()
    embedded.service.presence = presence
    call = clients[0].stub.Subscribe(
        game_pb2.SubscribeRequest(game_id=game_id), metadata=clients[0].metadata
    )
    await call.read()
    assert presence.calls == [("opened", game_id, "p0")]

    call.cancel()
    for _ in range(100):
        if len(presence.calls) == 2:
            break
        await asyncio.sleep(0.02)
    assert presence.calls == [("opened", game_id, "p0"), ("closed", game_id, "p0")]
