"""Replay frames (services/game/replay.py ``frame_at``) against the log evolved by hand.

For every game and variant (the golden logs, a four-player Hand match without partners and
matches where a bot took a seat over and gave it back), the frame at every seq equals the
engine's own fold of ``evolve`` over the log up to that seq: the same views for the
spectators and for every seat, the same event (whole from above, redacted by the game for a
seat or a spectator), the same chain hash and the same seat control.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2, replay_pb2
from engine.core.chain import chain_log
from engine.core.control import holders_of
from engine.core.logformat import load_jsonl
from engine.core.payload import take
from engine.core.protocol import Game
from engine.core.testing import play_bots
from engine.hand.bots import BOTS as HAND_BOTS
from engine.registry import GAMES, game_of_event
from services.game.replay import Viewpoint, frame_at, frames
from tests.engine.core.test_control import _play_with_control
from tests.golden_logs import GOLDEN

TABLE = Viewpoint(replay_pb2.REPLAY_VIEWPOINT_TABLE)
SPECTATOR = Viewpoint(replay_pb2.REPLAY_VIEWPOINT_SPECTATOR)


@dataclass(frozen=True)
class Log:
    name: str
    entries: list[log_pb2.LogEntry]

    @property
    def game(self) -> Game:
        return game_of_event(self.entries[0].event)


@functools.cache
def _logs() -> tuple[Log, ...]:
    logs = [Log(m.name, load_jsonl(m.path.read_text(encoding="utf-8"))) for m in GOLDEN]
    hand_4p = play_bots(GAMES[common_pb2.GAME_TYPE_HAND], HAND_BOTS,
                        hand_pb2.HandRules(players=4, rounds=1), bytes(range(32)),
                        ("greedy", "random", "greedy", "random"), 7)
    logs.append(Log("hand_4p", chain_log(hand_4p)))
    players = [common_pb2.Player(player_id=f"p{seat}") for seat in range(4)]
    hokm = GAMES[common_pb2.GAME_TYPE_HOKM]
    logs.append(Log("hokm_4p_seat_control", chain_log(
        _play_with_control(hokm, hokm_pb2.HokmRules(target_score=1, turn_seconds=30), players)
    )))
    return tuple(logs)


LOG_NAMES = [log.name for log in _logs()]


def _log(name: str) -> Log:
    return next(log for log in _logs() if log.name == name)


def _evolved(log: Log) -> Iterator[tuple[int, Any]]:
    """(seq, the state after it), folding the game's own ``evolve`` over the log."""
    state: Any = None
    for entry in log.entries:
        state = log.game.evolve(state, entry.event)
        yield entry.event.seq, state


def _view(game: Game, replay_view: replay_pb2.ReplayView) -> Any:
    return take(replay_view, "view", game.SCHEMA, game.SCHEMA.view)


def test_the_logs_cover_both_games_and_every_variant() -> None:
    seats = {(log.game.NAME, len(log.game.setup_of(log.entries[0].event).players))
             for log in _logs()}
    assert seats >= {("hokm", 4), ("hokm", 3), ("hokm", 2),
                     ("hand", 2), ("hand", 3), ("hand", 4)}
    assert any(e.event.HasField("seat_control") for e in _log("hokm_4p_seat_control").entries)


@pytest.mark.parametrize("name", LOG_NAMES)
def test_every_frame_from_above_is_the_log_evolved_to_its_seq(name: str) -> None:
    log = _log(name)
    game = log.game
    every = frames(name, log.entries, 1, len(log.entries), TABLE)
    for (seq, state), frame in zip(_evolved(log), every, strict=True):
        assert (frame.seq, frame.last_seq) == (seq, len(log.entries))
        assert frame.event == log.entries[seq - 1].event
        assert frame.hash == log.entries[seq - 1].hash
        assert frame.finished  # a finished log: every frame says so
        seats = [None, *range(len(state.holders))]
        assert [v.seat if v.HasField("seat") else None for v in frame.views] == seats
        for seat, replay_view in zip(seats, frame.views, strict=True):
            assert _view(game, replay_view) == game.view(state, seat), (seq, seat)
        assert list(frame.seat_control) == [
            holder.as_message(seat) for seat, holder in enumerate(holders_of(state))
        ]


@pytest.mark.parametrize("name", LOG_NAMES)
def test_every_seat_and_spectator_frame_is_the_games_own_projection(name: str) -> None:
    log = _log(name)
    game = log.game
    seats = len(game.setup_of(log.entries[0].event).players)
    for seat in [None, *range(seats)]:
        viewpoint = SPECTATOR if seat is None else Viewpoint(
            replay_pb2.REPLAY_VIEWPOINT_SEAT, seat)
        every = frames(name, log.entries, 1, len(log.entries), viewpoint)
        for (seq, state), frame in zip(_evolved(log), every, strict=True):
            event = log.entries[seq - 1].event
            assert frame.event == game.redact(event, seat), (seq, seat)
            assert len(frame.views) == 1
            assert _view(game, frame.views[0]) == game.view(state, seat), (seq, seat)
            assert frame.HasField("seat") == (seat is not None)


@pytest.mark.parametrize("name", LOG_NAMES)
def test_a_frame_reached_directly_is_the_frame_reached_step_by_step(name: str) -> None:
    """``frame_at`` replays the log from its start to the seq asked; ``frames`` steps from
    one frame to the next: the same frame either way, at every tenth seq and the last."""
    log = _log(name)
    stepped = list(frames(name, log.entries, 1, len(log.entries), TABLE))
    for seq in [*range(1, len(log.entries), 10), len(log.entries)]:
        assert frame_at(name, log.entries, seq, TABLE) == stepped[seq - 1]
    middle = len(log.entries) // 2
    assert list(frames(name, log.entries, middle, middle + 5, TABLE)) == (
        stepped[middle - 1:middle + 5])
