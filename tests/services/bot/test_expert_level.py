"""The bot service serves the ``expert`` level for both games, on a wall-clock budget."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import REGISTRY

from dast.v1 import hand_pb2, hokm_pb2
from engine import hand, hokm
from engine.core.testing import bot_players
from engine.registry import GAMES
from services.bot import policies
from services.bot.client import play_view
from services.bot.policies import Outcome, SeatView


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


async def test_a_bot_move_is_timed_by_level_and_decided_off_the_event_loop() -> None:
    game: Any = GAMES[hokm.GAME_TYPE]
    state = game.replay(game.start(hokm_pb2.HokmRules(), bytes(32), bot_players(4)))
    seat = game.to_act(state)
    seat_view = SeatView.of_view(game, state.seq, game.view(state, seat))
    threads: list[str] = []
    submitted: list[Any] = []

    class RecordingApi:
        async def submit(self, game_id: str, seat: int, command: Any, **_: Any) -> bool:
            submitted.append(command)
            return True

    original = policies.decide

    def decide_and_note_thread(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args)

    samples = {"level": "greedy"}
    before = REGISTRY.get_sample_value("dast_bot_decision_seconds_count", samples) or 0.0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("services.bot.client.decide", decide_and_note_thread)
        outcome = await play_view(RecordingApi(), "g", seat_view, "greedy",  # type: ignore[arg-type]
                                  command_id="c", automatic=False)
    assert outcome is Outcome.PLAYED and len(submitted) == 1
    assert threads and threads[0].startswith("bot-decide")
    after = REGISTRY.get_sample_value("dast_bot_decision_seconds_count", samples)
    assert after == before + 1
