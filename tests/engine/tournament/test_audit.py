"""The tournament log audits like a game's: replay equals the state; the seed revealed at
the end matches the commitment made at the start; a changed seed, result, pairing, seating,
ruling or standing is rejected; the public (redacted) log replays and verifies."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engine.core.errors import InvalidCommand
from engine.core.fairness import commit
from engine.core.rng import DeterministicRandom
from engine.tournament import (
    Entry,
    Event,
    EventBody,
    Format,
    ResultRecorded,
    RoundStarted,
    SetAbsent,
    SideResult,
    TournamentCreated,
    TournamentEnded,
    decode_event,
    encode_event,
    evolve,
    redact,
    replay,
    verify,
)
from engine.tournament.audit import AuditCode
from engine.tournament.sim import TournamentRun, play_out

from .support import make_run


def _finished(entrants: int = 12, **options: Any) -> TournamentRun:
    run = make_run(entrants, start=False, round_seconds=60, **options)
    run.apply(SetAbsent("e3p0", absent=True))
    play_out(run, DeterministicRandom(b"results", "audit"), at_ms=5000)
    return run


def _codes(events: list[Event]) -> list[AuditCode]:
    return [problem.code for problem in verify(events)]


def _replace_body(events: list[Event], index: int, body: EventBody) -> list[Event]:
    changed = list(events)
    changed[index] = dataclasses.replace(events[index], body=body)
    return changed


def test_replay_equals_the_state() -> None:
    run = _finished()
    assert replay(run.events) == run.state
    state = None
    for cut, event in enumerate(run.events, start=1):
        state = evolve(state, event)
        if cut % 7 == 0:
            assert replay(run.events[:cut]) == state


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"format": Format.KNOCKOUT},
        {"format": Format.ROUND_ROBIN},
        {"entry": Entry.INDIVIDUALS, "fill_with_bots": True},
    ],
)
def test_a_finished_log_verifies(options: dict[str, Any]) -> None:
    assert verify(_finished(**options).events) == []


def test_the_first_event_commits_to_the_seed_the_last_reveals() -> None:
    run = _finished()
    first, last = run.events[0].body, run.events[-1].body
    assert isinstance(first, TournamentCreated) and isinstance(last, TournamentEnded)
    assert first.commitment == commit(last.seed)


def test_the_redacted_log_hides_the_seed_and_still_replays_and_verifies() -> None:
    run = _finished()
    public = [redact(event) for event in run.events]
    created = public[0].body
    assert isinstance(created, TournamentCreated) and created.seed == b""
    assert replay(public).standings == run.state.standings
    assert verify(public) == []


def test_a_changed_seed_is_rejected() -> None:
    run = _finished()
    last = run.events[-1].body
    assert isinstance(last, TournamentEnded)
    forged = _replace_body(run.events, -1, dataclasses.replace(last, seed=bytes(32)))
    assert _codes(forged) == [AuditCode.COMMITMENT_MISMATCH]


def test_a_changed_commitment_and_seed_together_are_rejected() -> None:
    """Swapping in another seed with its own commitment re-derives different choices."""
    run = _finished()
    other = b"\x07" * 32
    created = run.events[0].body
    last = run.events[-1].body
    assert isinstance(created, TournamentCreated) and isinstance(last, TournamentEnded)
    forged = _replace_body(
        run.events, 0, dataclasses.replace(created, commitment=commit(other), seed=other)
    )
    forged = _replace_body(forged, -1, dataclasses.replace(last, seed=other))
    assert _codes(forged) == [AuditCode.DIVERGED]


def test_a_changed_result_is_rejected() -> None:
    run = _finished()
    index = next(i for i, e in enumerate(run.events) if isinstance(e.body, ResultRecorded))
    body = run.events[index].body
    assert isinstance(body, ResultRecorded)
    changed = dataclasses.replace(
        body, sides=tuple(SideResult(s.points + 1, s.tricks) for s in body.sides)
    )
    assert _codes(_replace_body(run.events, index, changed)) == [AuditCode.DIVERGED]


def test_a_changed_winner_is_rejected() -> None:
    run = _finished()
    index = next(i for i, e in enumerate(run.events) if isinstance(e.body, ResultRecorded))
    body = run.events[index].body
    assert isinstance(body, ResultRecorded)
    flipped = tuple(1 - w for w in body.winners)
    changed = dataclasses.replace(body, winners=flipped)
    assert _codes(_replace_body(run.events, index, changed)) == [AuditCode.DIVERGED]


def test_a_changed_pairing_is_rejected() -> None:
    run = _finished()
    index = next(
        i
        for i, e in enumerate(run.events)
        if isinstance(e.body, RoundStarted) and e.body.round == 2
    )
    body = run.events[index].body
    assert isinstance(body, RoundStarted)
    first, second = body.tables[0], body.tables[1]
    # Swap one seat between two tables: every entrant still plays once, the pairing differs.
    seats_a, seats_b = list(first.seats), list(second.seats)
    seats_a[0], seats_b[0] = (
        dataclasses.replace(seats_b[0], side=seats_a[0].side),
        dataclasses.replace(seats_a[0], side=seats_b[0].side),
    )
    tables = (
        dataclasses.replace(first, seats=tuple(seats_a)),
        dataclasses.replace(second, seats=tuple(seats_b)),
        *body.tables[2:],
    )
    changed = _replace_body(run.events, index, dataclasses.replace(body, tables=tables))
    assert _codes(changed) == [AuditCode.DIVERGED]


def test_a_changed_standing_is_rejected() -> None:
    run = _finished()
    last = run.events[-1].body
    assert isinstance(last, TournamentEnded)
    swapped = (last.standings[1], last.standings[0], *last.standings[2:])
    changed = _replace_body(run.events, -1, dataclasses.replace(last, standings=swapped))
    assert _codes(changed) == [AuditCode.DIVERGED]


def test_an_unfinished_log_does_not_verify() -> None:
    run = _finished()
    assert _codes(run.events[:-3]) == [AuditCode.NOT_FINISHED]
    assert _codes([]) == [AuditCode.EMPTY]
    assert _codes(run.events[1:]) == [AuditCode.NOT_CREATED]


def test_a_dropped_event_is_rejected() -> None:
    run = _finished()
    index = next(i for i, e in enumerate(run.events) if isinstance(e.body, ResultRecorded))
    shifted = [
        dataclasses.replace(e, seq=e.seq - 1) if i > index else e
        for i, e in enumerate(run.events)
        if i != index
    ]
    assert verify(shifted) != []


def test_every_event_round_trips_through_the_codec() -> None:
    run = _finished(entry=Entry.INDIVIDUALS, fill_with_bots=True)
    for event in run.events:
        data = encode_event(event)
        assert decode_event(data) == event
        assert encode_event(decode_event(data)) == data


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"{}",
        b'{"seq": 1, "at_ms": 0, "body": {"type": "Nope"}}',
        b'{"seq": "1", "at_ms": 0, "body": {"type": "EntrantWithdrew", "entrant_id": "x"}}',
        b'{"seq": 1, "at_ms": 0, "body": {"type": "EntrantWithdrew", "entrant_id": "x",'
        b' "extra": 1}}',
        b'{"seq": true, "at_ms": 0, "body": {"type": "EntrantWithdrew", "entrant_id": "x"}}',
    ],
)
def test_the_codec_refuses_malformed_events(data: bytes) -> None:
    with pytest.raises(InvalidCommand):
        decode_event(data)
