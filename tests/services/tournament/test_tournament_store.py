"""The tournament store on SQLite and PostgreSQL: one step per seq, the index of matches,
the bus watermark, and two replicas racing for the same step."""

from __future__ import annotations

import asyncio
import functools
from typing import TypeVar

import pytest

from dast.v1 import common_pb2, tournament_pb2
from engine import tournament as engine
from engine.core.errors import RuleViolation
from services.tournament import chain
from services.tournament.service import standings_of
from services.tournament.store import (
    ConcurrencyConflict,
    KeptName,
    ListingQuery,
    MatchPlace,
    Step,
    StoredEvent,
    TournamentExists,
    TournamentNotFound,
    TournamentStore,
)
from services.tournament.tournaments import Tournaments

_T = TypeVar("_T")


def _summary(status: int = tournament_pb2.TOURNAMENT_STATUS_REGISTERING
             ) -> tournament_pb2.TournamentSummary:
    return tournament_pb2.TournamentSummary(tournament_id="t1", status=status)  # type: ignore[arg-type]


def _events(first: int, count: int) -> list[StoredEvent]:
    return [StoredEvent(seq, f"event {seq}".encode(), bytes([seq]) * 32, seq)
            for seq in range(first, first + count)]


def test_an_append_at_a_stale_seq_is_a_concurrency_conflict(store: TournamentStore) -> None:
    store.create("t1", Step(_events(1, 1), _summary()), created_at_ms=1)
    store.append("t1", 1, Step(_events(2, 2), _summary()))
    with pytest.raises(ConcurrencyConflict):
        store.append("t1", 1, Step(_events(2, 1), _summary()))
    assert [stored.seq for stored in store.load("t1")] == [1, 2, 3]
    assert [stored.seq for stored in store.load("t1", 2)] == [3]
    with pytest.raises(TournamentExists):
        store.create("t1", Step(_events(1, 1), _summary()), created_at_ms=1)
    with pytest.raises(TournamentNotFound):
        store.append("nope", 0, Step(_events(1, 1), _summary()))
    with pytest.raises(TournamentNotFound):
        store.load("nope")
    with pytest.raises(ValueError, match="does not follow"):
        store.append("t1", 3, Step(_events(5, 1), _summary()))


def test_the_matches_of_a_step_are_found_by_game_id_and_the_head_moves_with_it(
        store: TournamentStore) -> None:
    store.create("t1", Step(_events(1, 1), _summary()), created_at_ms=1)
    running = tournament_pb2.TOURNAMENT_STATUS_RUNNING
    store.append("t1", 1, Step(_events(2, 1), _summary(running), round_deadline_ms=99,
                               matches=[MatchPlace("t1-r1-t0", "t1", 1, 0)]))
    assert store.place_of("t1-r1-t0") == MatchPlace("t1-r1-t0", "t1", 1, 0)
    assert store.place_of("another-game") is None
    head = store.head("t1")
    assert (head.last_seq, head.status, head.round_deadline_ms) == (2, running, 99)
    assert [h.tournament_id for h in store.heads_in(running)] == ["t1"]
    assert [item.summary.tournament_id for item in store.listed(
        ListingQuery(status=running), 10)] == ["t1"]
    assert store.listed(ListingQuery(status=tournament_pb2.TOURNAMENT_STATUS_FINISHED), 10) == []


def test_the_bus_watermark_only_moves_forward(store: TournamentStore) -> None:
    store.create("t1", Step(_events(1, 3), _summary()), created_at_ms=1)
    assert [h.tournament_id for h in store.unpublished()] == ["t1"]
    store.mark_published("t1", 3)
    store.mark_published("t1", 2)
    assert store.head("t1").published_seq == 3
    assert store.unpublished() == []


def _settings() -> tournament_pb2.TournamentSettings:
    return tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM, rounds=1)


async def test_two_replicas_registering_at_once_each_append_once_on_one_chain(
        store: TournamentStore) -> None:
    first, second = Tournaments(store), Tournaments(store)
    loaded = await first.create(_settings(), "host")
    tournament_id = loaded.tournament_id
    await second.load(tournament_id)  # both replicas start from the same cached state

    async def register(replica: Tournaments, name: str) -> None:
        await replica.step(tournament_id, lambda state: engine.Register(
            name, (name,), at_ms=1))

    await asyncio.gather(*(register(first if n % 2 else second, f"p{n}") for n in range(12)))
    events = [engine.decode_event(stored.body) for stored in store.load(tournament_id)]
    registered = [e.body.entrant.entrant_id for e in events
                  if isinstance(e.body, engine.EntrantRegistered)]
    assert sorted(registered) == sorted(f"p{n}" for n in range(12))
    stored = store.load(tournament_id)
    assert chain.broken_links(tournament_id, [(s.body, s.hash) for s in stored]) == []
    assert first.steps + second.steps == 12


def test_the_hash_chain_points_at_the_first_event_that_was_changed() -> None:
    links = []
    previous = chain.GENESIS
    for body in (b"created", b"registered", b"started"):
        previous = chain.chain_hash("t1", previous, body)
        links.append((body, previous))
    assert chain.broken_links("t1", links) == []
    tampered = [links[0], (b"registered someone else", links[1][1]), links[2]]
    assert chain.broken_links("t1", tampered) == [2]
    assert chain.broken_links("t2", links) == [1, 2, 3]  # another tournament's chain


def _always(value: _T, _ignored: object) -> _T:
    return value


async def test_names_are_kept_beside_the_log_and_an_erasure_blanks_them(
        store: TournamentStore) -> None:
    tournaments = Tournaments(store)
    tournament_id = (await tournaments.create(_settings(), "host")).tournament_id
    for player, name in (("alice", "Alice Ahmadi"), ("bob", "Bob Bahrami")):
        register = engine.Register(player, (player,), at_ms=1)
        await tournaments.step(tournament_id, functools.partial(_always, register),
                               names=functools.partial(_always, [(player, name)]))
    # A registration the engine refuses keeps no name either (nothing is appended).
    with pytest.raises(RuleViolation):
        await tournaments.step(tournament_id, lambda state: engine.Register(
            "alice", ("alice",), at_ms=2), names=lambda command: [("alice", "Mallory")])
    assert store.names_of(tournament_id) == {
        "alice": KeptName("Alice Ahmadi"), "bob": KeptName("Bob Bahrami")}
    assert not any(b"Alice" in item.body or b"Bob B" in item.body
                   for item in store.load(tournament_id))
    state = (await tournaments.load(tournament_id)).state
    shown = {line.player_id: (line.display_name, line.deleted)
             for line in standings_of(state, store.names_of(tournament_id))}
    assert shown == {"alice": ("Alice Ahmadi", False), "bob": ("Bob Bahrami", False)}

    assert store.erase_names("alice") == 1
    assert store.erase_names("alice") == 0  # a second time changes nothing
    shown = {line.player_id: (line.display_name, line.deleted)
             for line in standings_of(state, store.names_of(tournament_id))}
    assert shown == {"alice": ("", True), "bob": ("Bob Bahrami", False)}
