"""Property tests over random legal play (docs/architecture.md "Random simulation"), for the three
variants and a spread of options: every match ends, cards are conserved, replay equals the
evolved state at every k, logs are reproducible byte for byte, nobody sees a hidden card,
the audit passes, and any flipped byte of a log fails verification."""

from __future__ import annotations

import hashlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.audit import audit_log
from engine.core.chain import canonical_bytes, chain_log
from engine.core.rng import DeterministicRandom
from engine.core.testing import Visibility, random_sim
from engine.hokm.sim import play_match
from engine.hokm.views import event_cards, hidden_mask, view_cards

from .invariants import check_cards_conserved
from .notation import VARIANT, players

VISIBILITY = Visibility(hidden_mask=hidden_mask, event_cards=event_cards, view_cards=view_cards)


@st.composite
def hokm_rules(draw: st.DrawFn, max_target: int = 2) -> hokm_pb2.HokmRules:
    seats = draw(st.sampled_from([4, 3, 2]))
    return hokm_pb2.HokmRules(
        variant=VARIANT[seats],
        hakem_selection=draw(st.sampled_from(list(hokm_pb2.HakemSelection.values()))),
        play_all_tricks=draw(st.booleans()),
        hakem_rotation=draw(st.sampled_from(list(hokm_pb2.HakemRotation.values()))),
        target_score=draw(st.integers(1, max_target)),
        random_partners=draw(st.booleans()),
        trump_2p=draw(st.sampled_from(list(hokm_pb2.Trump2p.values()))),
        turn_seconds=draw(st.sampled_from([0, 30])),
        tricks_to_win_3p=draw(st.sampled_from([9, 10])),
        tricks_to_win_2p=draw(st.sampled_from([14, 16])),
    )


def seats_of(rules: hokm_pb2.HokmRules) -> int:
    return {v: s for s, v in VARIANT.items()}[rules.variant]


def fuzz_command(rng: DeterministicRandom, seats: int) -> log_pb2.Command:
    """A random, mostly illegal command: any kind, any seat, cards in and out of range."""
    command = log_pb2.Command(seat=rng.randbelow(seats + 1))
    kind = rng.randbelow(5)
    if kind == 0:
        command.hokm.play_card.card = rng.randbelow(54)
    elif kind == 1:
        command.hokm.declare_trump.suit = rng.randbelow(6)  # type: ignore[assignment]
    elif kind == 2:
        count = rng.randbelow(6)
        command.hokm.set_aside_cards.cards.extend(rng.randbelow(53) for _ in range(count))
    elif kind == 3:
        command.hokm.take_pile_card.pile = rng.randbelow(3)
    else:
        command.hokm.SetInParent()
    return command


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=hokm_rules(max_target=2), seed=st.binary(min_size=32, max_size=32))
def test_random_play_passes_every_harness_check(
    rules: hokm_pb2.HokmRules, seed: bytes
) -> None:
    report = random_sim(
        hokm, rules, players(seats_of(rules)), [seed], VISIBILITY, fuzz=fuzz_command,
        check_state=check_cards_conserved, keep_logs=True,
    )
    assert report.matches == 1 and report.fuzzed == report.commands
    assert audit_log(chain_log(report.logs[0])).ok


@settings(max_examples=30, deadline=None)
@given(rules=hokm_rules(max_target=3), seed=st.binary(min_size=32, max_size=32),
       bot_seed=st.integers(0, 2**32))
def test_bot_matches_end_conserve_cards_and_pass_the_audit(
    rules: hokm_pb2.HokmRules, seed: bytes, bot_seed: int
) -> None:
    seats = seats_of(rules)
    policies = ["greedy", "random", "greedy", "random"][:seats]
    events = play_match(rules, seed, policies, bot_seed)
    state = None
    for event in events:
        if hokm.command_for(event) is not None:  # a new command: the state is at rest
            assert state is not None
            check_cards_conserved(state)
        state = hokm.evolve(state, event)
    assert state is not None and hokm.is_over(state)
    check_cards_conserved(state)
    assert max(state.scores) >= rules.target_score
    report = audit_log(chain_log(events))
    assert report.ok, report.problems
    # Same seed and commands: a byte-identical log.
    again = play_match(rules, seed, policies, bot_seed)
    assert [canonical_bytes(e) for e in again] == [canonical_bytes(e) for e in events]


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_flipped_byte_fails_verification(data: st.DataObject) -> None:
    entries = chain_log(_finished_log())
    index = data.draw(st.integers(0, len(entries) - 1))
    tampered = [log_pb2.LogEntry(event=e.event, hash=e.hash) for e in entries]
    if data.draw(st.booleans()):
        raw = bytearray(tampered[index].hash)
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] ^= 1 << data.draw(st.integers(0, 7))
        tampered[index].hash = bytes(raw)
    else:
        raw = bytearray(canonical_bytes(tampered[index].event))
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] ^= 1 << data.draw(st.integers(0, 7))
        event = log_pb2.Event()
        try:
            event.ParseFromString(bytes(raw))
        except Exception:
            return  # not even a protobuf any more: no reader would accept it
        if canonical_bytes(event) == canonical_bytes(entries[index].event):
            return  # the flip decodes to the very same event: nothing was changed
        tampered[index].event.CopyFrom(event)
    assert not audit_log(tampered).ok


_LOG: list[log_pb2.Event] = []


def _finished_log() -> list[log_pb2.Event]:
    if not _LOG:
        seed = hashlib.sha256(b"tamper").digest()
        _LOG.extend(play_match(hokm_pb2.HokmRules(target_score=2), seed, ["greedy"] * 4, 3))
    return _LOG


def test_harness_on_fixed_seeds_for_each_variant() -> None:
    from engine.core.testing import sim_seeds

    for seats in (4, 3, 2):
        rules = hokm_pb2.HokmRules(variant=VARIANT[seats], target_score=3)
        report = random_sim(hokm, rules, players(seats), sim_seeds(2, f"hokm{seats}"), VISIBILITY,
                            fuzz=fuzz_command, check_state=check_cards_conserved)
        assert report.matches == 2 and report.events > 100


@settings(max_examples=20, deadline=None)
@given(rules=hokm_rules(max_target=1), seed=st.binary(min_size=32, max_size=32),
       bot_seed=st.integers(0, 2**32))
def test_replay_of_every_prefix_equals_the_incrementally_evolved_state(
    rules: hokm_pb2.HokmRules, seed: bytes, bot_seed: int
) -> None:
    events = play_match(rules, seed, ["random"] * seats_of(rules), bot_seed)
    state = None
    for k, event in enumerate(events, start=1):
        state = hokm.evolve(state, event)
        assert hokm.replay(events[:k]) == state, f"prefix of {k} events"
