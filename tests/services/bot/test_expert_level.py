"""The bot service serves the ``expert`` level for both games, on a wall-clock budget."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dast.v1 import hand_pb2, hokm_pb2
from engine import hand, hokm
from engine.core.testing import bot_players
from services.bot import policies


def test_expert_is_a_level_of_both_games() -> None:
    assert "expert" in policies.POLICIES["hokm"] and "expert" in policies.POLICIES["hand"]
    assert policies.bot_level("bot:expert:2") == "expert"
    assert policies.EXPERT_BUDGET.clock is not None  # bounded by time, not by samples


@pytest.mark.parametrize(
    ("game", "rules", "seats"),
    [("hokm", hokm_pb2.HokmRules(), 4), ("hand", hand_pb2.HandRules(players=2), 2)],
)
def test_the_expert_answers_a_seat_view_legally_within_its_budget(
    game: str, rules: Any, seats: int
) -> None:
    engine: Any = hokm if game == "hokm" else hand
    state = engine.replay(engine.start(rules, bytes(32), bot_players(seats)))
    seat = engine.to_act(state)
    view = engine.view(state, seat)
    began = time.perf_counter()
    command = policies.policy_for(game, "expert")(view, policies.rng_for("g", state.seq, seat))
    elapsed = time.perf_counter() - began
    assert command in [getattr(c, game) for c in engine.legal(state, seat)]
    # 200 ms of search, plus a generous margin for a shared machine.
    assert elapsed < policies.EXPERT_BUDGET.time_ms / 1000 + 0.5
