"""Seat control in the log (engine/core/control.py): takeovers and returns are events the
game never sees, which replay, the views' holders and the audit all re-derive."""

from __future__ import annotations

import pytest

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2
from engine.core.audit import audit_log
from engine.core.chain import chain_log
from engine.core.control import ControlCode, ControlledGame, holders_of, seat_control_command
from engine.core.errors import InvalidCommand, RuleViolation
from engine.core.protocol import Game
from engine.core.rng import DeterministicRandom
from engine.registry import GAMES

SEED = bytes(range(32))
DISCONNECTED = log_pb2.SEAT_CONTROL_REASON_DISCONNECTED
RECONNECTED = log_pb2.SEAT_CONTROL_REASON_RECONNECTED


def _players(count: int, bots: tuple[int, ...] = ()) -> list[common_pb2.Player]:
    return [common_pb2.Player(player_id=f"p{seat}", is_bot=seat in bots) for seat in range(count)]


def _takeover(seat: int, at_ms: int = 5) -> log_pb2.Command:
    return seat_control_command(seat, bot=True, bot_level="basic", reason=DISCONNECTED,
                                requested_by="service:presence", at_ms=at_ms)


def _return(seat: int, at_ms: int = 6) -> log_pb2.Command:
    return seat_control_command(seat, bot=False, reason=RECONNECTED,
                                requested_by="player:p0", at_ms=at_ms)


def _play_with_control(game: Game, rules: object, players: list[common_pb2.Player],
                       every: int = 7) -> list[log_pb2.Event]:
    """A whole match of random legal moves, seat 0 taken over and given back now and then."""
    rng = DeterministicRandom(b"control-test", "moves")
    events = game.start(rules, SEED, players, at_ms=1)
    state = game.replay(events)
    for step in range(20_000):
        seat = game.to_act(state)
        if seat is None:
            return events
        if step % every == every - 1:
            taken = bool(holders_of(state)[0].bot)
            command = _return(0) if taken else _takeover(0)
        else:
            legal = game.legal(state, seat)
            command = legal[rng.randbelow(len(legal))]
            command.at_ms = 10 + step
        for event in game.decide(state, command):
            state = game.evolve(state, event)
            events.append(event)
    raise AssertionError("the match did not end")


@pytest.mark.parametrize("game_type, rules, seats", [
    (common_pb2.GAME_TYPE_HOKM, hokm_pb2.HokmRules(target_score=1, turn_seconds=30), 4),
    (common_pb2.GAME_TYPE_HAND, hand_pb2.HandRules(players=2, turn_seconds=30), 2),
])
def test_a_match_with_takeovers_and_returns_replays_and_passes_the_audit(
    game_type: int, rules: object, seats: int
) -> None:
    game = GAMES[game_type]
    events = _play_with_control(game, rules, _players(seats))
    controls = [e for e in events if e.HasField("seat_control")]
    assert len(controls) >= 2
    assert [c.seat_control.bot for c in controls[:2]] == [True, False]
    # Replaying the log gives the state built step by step, holders included.
    state = game.replay(events)
    assert state is not None and game.is_over(state) and state.seq == len(events)
    report = audit_log(chain_log(events))
    assert report.ok, report.problems
    # Once the match is over no seat changes hands.
    with pytest.raises(RuleViolation) as refused:
        game.decide(state, _takeover(1))
    assert refused.value.code == "game_over"


def test_a_seat_control_event_keeps_the_turn_and_repeats_the_pending_deadline() -> None:
    game = GAMES[common_pb2.GAME_TYPE_HOKM]
    events = game.start(hokm_pb2.HokmRules(turn_seconds=30), SEED, _players(4), at_ms=1)
    state = game.replay(events)
    before = game.to_act(state)
    [event] = game.decide(state, _takeover(1))
    assert event.seq == state.seq + 1 and event.deadline_ms == events[-1].deadline_ms > 0
    assert event.seat_control.requested_by == "service:presence"
    after = game.evolve(state, event)
    assert game.to_act(after) == before
    assert holders_of(after)[1].bot and holders_of(after)[1].bot_level == "basic"
    assert holders_of(after)[1].since_seq == event.seq
    # The next game move is numbered after the seat-control event.
    seat = game.to_act(after)
    assert seat is not None
    [move, *_] = game.decide(after, game.legal(after, seat)[0])
    assert move.seq == event.seq + 1


def test_taking_over_a_seat_a_bot_plays_or_returning_a_held_seat_decides_nothing() -> None:
    game = GAMES[common_pb2.GAME_TYPE_HOKM]
    state = game.replay(game.start(hokm_pb2.HokmRules(), SEED, _players(4), at_ms=1))
    assert game.decide(state, _return(2)) == []
    state = game.evolve(state, game.decide(state, _takeover(2))[0])
    assert game.decide(state, _takeover(2)) == []


def test_a_bot_seated_from_the_start_and_a_missing_seat_are_refused() -> None:
    game = GAMES[common_pb2.GAME_TYPE_HOKM]
    state = game.replay(game.start(hokm_pb2.HokmRules(), SEED, _players(4, bots=(3,)), at_ms=1))
    with pytest.raises(RuleViolation) as refused:
        game.decide(state, _takeover(3))
    assert refused.value.code == ControlCode.SEAT_IS_A_BOT
    with pytest.raises(InvalidCommand):
        game.decide(state, _takeover(9))
    with pytest.raises(InvalidCommand):
        game.decide(state, seat_control_command(1, bot=True, reason=DISCONNECTED,
                                                requested_by="service:x"))


def test_seat_control_events_are_public_and_never_reveal_a_seed() -> None:
    game = GAMES[common_pb2.GAME_TYPE_HOKM]
    state = game.replay(game.start(hokm_pb2.HokmRules(), SEED, _players(4), at_ms=1))
    [event] = game.decide(state, _takeover(0))
    assert game.redact(event, 2) == event and game.redact(event, None) == event
    assert game.revealed_seed(event) is None
    assert game.command_for(event) == _takeover(0)


def test_an_audit_catches_a_seat_control_event_that_changed_nothing() -> None:
    game = GAMES[common_pb2.GAME_TYPE_HOKM]
    events = _play_with_control(game, hokm_pb2.HokmRules(target_score=1), _players(4), every=9)
    first_return = next(i for i, e in enumerate(events)
                        if e.HasField("seat_control") and not e.seat_control.bot)
    forged = [log_pb2.Event() for _ in events]
    for copy, event in zip(forged, events, strict=True):
        copy.CopyFrom(event)
    # A forged "takeover" where the log had the return: the seat was the bot's already.
    forged[first_return].seat_control.bot = True
    forged[first_return].seat_control.bot_level = "basic"
    report = audit_log(chain_log(forged))
    assert not report.ok
    assert any(f"seq {first_return + 1}" in problem for problem in report.problems)


def test_the_wrapper_offers_the_game_modules_own_names() -> None:
    game = GAMES[common_pb2.GAME_TYPE_HOKM]
    assert isinstance(game, ControlledGame)
    from engine import hokm

    assert game.GAME_TYPE == hokm.GAME_TYPE and game.NAME == "hokm"
    assert game.SCHEMA is hokm.SCHEMA  # a name the wrapper does not define is the module's
