"""ReplayService and AuditService sent hostile messages (tests/support/hostile.py): every
reply keeps the rule of every dast RPC (a documented status, no internals, an ``ErrorInfo``
naming an ``ErrorReason``), and nothing is appended to any game."""

from __future__ import annotations

from typing import Final

import grpc
from google.protobuf.descriptor import MethodDescriptor
from hypothesis import HealthCheck, given, settings

from dast.v1 import audit_pb2, replay_pb2
from engine.core.logformat import load_jsonl
from engine.registry import game_of_event
from services.platform.auth import Role
from tests.golden_logs import GOLDEN
from tests.services.game.conftest import Embedded
from tests.support.hostile import calls, garbage_payloads, reply_problem, send
from tests.support.tokens import token

METHODS: Final = [
    *replay_pb2.DESCRIPTOR.services_by_name["ReplayService"].methods,
    *audit_pb2.DESCRIPTOR.services_by_name["AuditService"].methods,
]


async def test_hostile_replay_and_audit_calls_get_documented_statuses(
    embedded: Embedded,
) -> None:
    entries = load_jsonl(next(m for m in GOLDEN if m.name == "hokm_2p").path.read_text())
    game_type = game_of_event(entries[0].event).GAME_TYPE
    embedded.store.create_game("done", game_type, entries)
    embedded.store.create_game("running", game_type, entries[:40], spectators_allowed=False)
    before = {game: embedded.store.last_seq(game) for game in ("done", "running")}
    tokens = {
        "none": None, "garbage": "not.a.token",
        "seated": token("hokm_2p-0"), "stranger": token("x"),
        "service": token("bots", Role.SERVICE),
        "admin": token("root", Role.ADMIN),
        "expired": token("hokm_2p-0", ttl_seconds=-60),
    }
    for method in METHODS:
        for payload in garbage_payloads(method):
            for name, value in tokens.items():
                code, _, error = await send(embedded.channel, method, payload, value)
                assert reply_problem(code, payload, error) is None, (method.name, name)
                if value is None:
                    assert code == grpc.StatusCode.UNAUTHENTICATED

    # Hypothesis draws the calls (it cannot await); the test loop then sends them.
    drawn: list[tuple[MethodDescriptor, bytes, str]] = []

    @settings(max_examples=100, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(calls(METHODS, ["done", "running", "hokm_2p-0"], list(tokens)))
    def draw(call: tuple[MethodDescriptor, bytes, str]) -> None:
        drawn.append(call)

    draw()
    seen = set()
    for method, payload, name in drawn:
        code, _, error = await send(embedded.channel, method, payload, tokens[name])
        seen.add(code)
        assert reply_problem(code, payload, error) is None, (method.name, name, payload[:60])
    assert len(drawn) >= 80
    # Some calls were refused at the edge, some reached the services' own decisions.
    edge = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED}
    assert grpc.StatusCode.INVALID_ARGUMENT in seen and seen - edge
    assert {game: embedded.store.last_seq(game) for game in before} == before
