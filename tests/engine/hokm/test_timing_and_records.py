"""The brief's time rules (deadlines, automatic commands) and what the audit reads back
(setup_of, command_for, revealed_seed)."""

from __future__ import annotations

from dast.v1 import common_pb2, hokm_pb2
from engine import hokm

from .notation import SEED, declare, play, players, position, rules, run, started


def test_deadline_is_set_on_the_last_event_of_a_batch() -> None:
    # turn_seconds (default 30, `001`): "applied to every play and to the trump declaration".
    events = hokm.start(rules(4), SEED, players(4), at_ms=1_000)
    assert [e.deadline_ms for e in events] == [0] * (len(events) - 1) + [31_000]
    assert all(e.at_ms == 1_000 for e in events)
    state = hokm.replay(events)
    assert state.deadline_ms == 31_000 and hokm.view(state, 0).deadline_ms == 31_000
    batch = hokm.decide(state, declare(state.hakem, "♥", at_ms=5_000))
    assert [e.deadline_ms for e in batch] == [0, 35_000]


def test_turn_seconds_option_and_untimed_tables() -> None:
    events = hokm.start(rules(4, turn_seconds=15), SEED, players(4), at_ms=0)
    assert events[-1].deadline_ms == 15_000
    events = hokm.start(rules(4, turn_seconds=0), SEED, players(4), at_ms=0)
    assert all(e.deadline_ms == 0 for e in events)


def test_automatic_commands_mark_their_events() -> None:
    # docs/architecture.md "Time": a timed-out seat's bot move is an ordinary command marked
    # automatic.
    state = position(["A♠ 2♦", "2♠ 3♦", "3♠ 4♦", "K♠ 5♦"])
    events = hokm.decide(state, play(0, "A♠", at_ms=9, automatic=True))
    assert events[0].automatic and events[0].at_ms == 9
    assert hokm.command_for(events[0]) == play(0, "A♠", at_ms=9, automatic=True)


def test_no_deadline_once_the_match_is_over() -> None:
    state = position(["A♠", "2♥", "3♥", "4♥"], tricks_won=(5, 1, 1, 0), scores=(6, 0, 6, 0))
    events, _ = run(state, play(0, "A♠", at_ms=1), play(1, "2♥", at_ms=2),
                    play(2, "3♥", at_ms=3), play(3, "4♥", at_ms=4))
    assert events[-1].hokm.HasField("match_ended") and events[-1].deadline_ms == 0


def test_setup_of_returns_starts_arguments() -> None:
    given = players(4)
    given[1].client_seed = b"abc"
    events = hokm.start(rules(4, random_partners=True), SEED, given)
    setup = hokm.setup_of(events[0])
    assert isinstance(setup.rules, hokm_pb2.HokmRules)  # MatchSetup.rules is typed as Message
    assert setup.players == tuple(given) and setup.server_seed == SEED
    assert hokm.start(setup.rules, setup.server_seed, setup.players) == events


def test_command_for_reads_back_player_moves_only() -> None:
    events, state = started()
    assert all(hokm.command_for(e) is None for e in events)
    batch, _ = run(state, declare(state.hakem, "♦", at_ms=7))
    assert hokm.command_for(batch[0]) == declare(state.hakem, "♦", at_ms=7)
    assert hokm.command_for(batch[1]) is None
    two, _ = started(2)
    assert all(hokm.command_for(e) is None for e in two)  # trump from the pile: no command


def test_revealed_seed_only_in_the_final_event() -> None:
    state = position(["A♠", "2♥", "3♥", "4♥"], tricks_won=(5, 1, 1, 0), scores=(6, 0, 6, 0))
    events, _ = run(state, play(0, "A♠"), play(1, "2♥"), play(2, "3♥"), play(3, "4♥"))
    assert hokm.revealed_seed(events[-1]) == SEED
    assert all(hokm.revealed_seed(e) is None for e in events[:-1])
    assert hokm.GAME_TYPE == common_pb2.GAME_TYPE_HOKM and hokm.NAME == "hokm"


def test_public_functions_never_mutate_or_share_their_inputs() -> None:
    # The brief: "the public surface never mutates what it is given".
    events, state = started()
    before = [e.SerializeToString() for e in events]
    command = declare(state.hakem, "♣")
    wire = command.SerializeToString()
    hokm.decide(state, command)
    hokm.redact(events[0], 1)
    hokm.view(state, state.hakem)
    assert [e.SerializeToString() for e in events] == before
    assert command.SerializeToString() == wire
    # Changing an event after it was applied does not reach into the state.
    replayed = hokm.replay(events)
    events[0].hokm.match_started.rules.target_score = 99
    events[0].hokm.match_started.players[0].player_id = "changed"
    assert replayed.rules.target_score == 7 and replayed.players[0].player_id == "p0"
