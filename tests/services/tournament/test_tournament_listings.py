"""The tournament store's listings on SQLite and PostgreSQL: featured open tournaments first,
then newest first, paged by key (a tournament created between two pages shifts nothing),
filtered by status, game and operator; a host's open tournaments counted in the creating
transaction, so concurrent creations never pass the limit; ids quoted short when unknown."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import delete

from dast.v1 import common_pb2, tournament_pb2
from services.tournament.store import (
    LISTINGS,
    ListingQuery,
    OpenLimitReached,
    Position,
    Step,
    StoredEvent,
    TournamentNotFound,
    TournamentStore,
)

REGISTERING = tournament_pb2.TOURNAMENT_STATUS_REGISTERING
RUNNING = tournament_pb2.TOURNAMENT_STATUS_RUNNING
FINISHED = tournament_pb2.TOURNAMENT_STATUS_FINISHED
HOKM = common_pb2.GAME_TYPE_HOKM
HAND = common_pb2.GAME_TYPE_HAND


def _summary(tournament_id: str, *, host: str = "host", status: int = REGISTERING,
             featured: bool = False, by_operator: bool = False, game_type: int = HOKM
             ) -> tournament_pb2.TournamentSummary:
    return tournament_pb2.TournamentSummary(
        tournament_id=tournament_id, host_id=host, status=status,  # type: ignore[arg-type]
        featured=featured, created_by_operator=by_operator,
        settings=tournament_pb2.TournamentSettings(game_type=game_type))  # type: ignore[arg-type]


def _event(seq: int) -> list[StoredEvent]:
    return [StoredEvent(seq, f"event {seq}".encode(), bytes([seq]) * 32, seq)]


def _create(store: TournamentStore, tournament_id: str, created_at_ms: int, *,
            open_limit: int | None = None, **summary: object) -> None:
    store.create(tournament_id, Step(_event(1), _summary(tournament_id, **summary)),  # type: ignore[arg-type]
                 created_at_ms=created_at_ms, open_limit=open_limit)


EVERY: ListingQuery = ListingQuery()


def _ids(store: TournamentStore, query: ListingQuery = EVERY, page: int = 100) -> list[str]:
    """Every tournament ``query`` lists, read ``page`` at a time."""
    ids: list[str] = []
    after: Position | None = None
    while True:
        listed = store.listed(query, page, after)
        ids.extend(item.summary.tournament_id for item in listed)
        if len(listed) < page:
            return ids
        after = listed[-1].position


def test_featured_open_tournaments_come_first_then_the_newest(store: TournamentStore) -> None:
    _create(store, "old", 1)
    _create(store, "featured-old", 2, featured=True, by_operator=True)
    _create(store, "new", 5)
    _create(store, "same-time-b", 3)
    _create(store, "same-time-a", 3)
    _create(store, "featured-new", 4, featured=True, by_operator=True)
    expected = ["featured-new", "featured-old", "new", "same-time-a", "same-time-b", "old"]
    assert _ids(store) == expected
    assert _ids(store, page=1) == expected
    assert _ids(store, page=4) == expected
    # A featured tournament that ends is listed among the others again.
    store.append("featured-new", 1, Step(_event(2), _summary(
        "featured-new", status=FINISHED, featured=True, by_operator=True)))
    assert _ids(store) == ["featured-old", "new", "featured-new", "same-time-a",
                           "same-time-b", "old"]


def test_a_tournament_created_between_two_pages_shifts_nothing(store: TournamentStore) -> None:
    for number in range(5):
        _create(store, f"t{number}", 10 + number)
    first = store.listed(ListingQuery(), 2)
    assert [item.summary.tournament_id for item in first] == ["t4", "t3"]
    # A flood of new ones (and a featured one) arrives before the next page is read.
    for number in range(5, 40):
        _create(store, f"t{number}", 100 + number)
    _create(store, "featured", 200, featured=True)
    rest = store.listed(ListingQuery(), 10, first[-1].position)
    assert [item.summary.tournament_id for item in rest] == ["t2", "t1", "t0"]


def test_listings_filter_by_status_game_and_operator(store: TournamentStore) -> None:
    _create(store, "hokm-open", 1)
    _create(store, "hand-open", 2, game_type=HAND)
    _create(store, "by-operator", 3, by_operator=True)
    _create(store, "running", 4)
    store.append("running", 1, Step(_event(2), _summary("running", status=RUNNING)))
    assert _ids(store, ListingQuery(status=RUNNING)) == ["running"]
    assert _ids(store, ListingQuery(status=REGISTERING), page=1) == [
        "by-operator", "hand-open", "hokm-open"]
    assert _ids(store, ListingQuery(game_type=HAND)) == ["hand-open"]
    assert _ids(store, ListingQuery(by_operator=True)) == ["by-operator"]
    assert _ids(store, ListingQuery(status=RUNNING, game_type=HAND)) == []


def test_a_host_has_at_most_the_limit_of_open_tournaments(store: TournamentStore) -> None:
    _create(store, "a1", 1, host="alice", open_limit=2)
    _create(store, "a2", 2, host="alice", open_limit=2)
    with pytest.raises(OpenLimitReached) as reached:
        _create(store, "a3", 3, host="alice", open_limit=2)
    assert reached.value.open_count == 2
    assert store.open_count("alice") == 2
    _create(store, "b1", 4, host="bob", open_limit=2)  # another host's count is their own
    _create(store, "a-unlimited", 5, host="alice")  # no limit asked (an operator's)
    # A running tournament is still open; a finished one no longer counts.
    store.append("a1", 1, Step(_event(2), _summary("a1", host="alice", status=RUNNING)))
    with pytest.raises(OpenLimitReached):
        _create(store, "a3", 3, host="alice", open_limit=3)
    store.append("a1", 2, Step(_event(3), _summary("a1", host="alice", status=FINISHED)))
    _create(store, "a3", 6, host="alice", open_limit=3)
    assert _ids(store) == ["a3", "a-unlimited", "b1", "a2", "a1"]


def test_concurrent_creations_of_one_host_never_pass_the_limit(store: TournamentStore) -> None:
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def create(number: int) -> None:
        start.wait()
        try:
            _create(store, f"race-{number}", number, host="racer", open_limit=2)
            outcomes.append("created")
        except OpenLimitReached:
            outcomes.append("refused")

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["created"] * 2 + ["refused"] * 6
    assert store.open_count("racer") == 2


def test_tournaments_stored_before_listings_get_their_listing_rows(
        store: TournamentStore) -> None:
    _create(store, "before", 7, featured=True, game_type=HAND, host="carol")
    with store._transaction() as db:  # as stored before the listings table existed
        db.execute(delete(LISTINGS))
    assert _ids(store) == []
    assert store.write_missing_listings() == 1
    assert store.write_missing_listings() == 0
    (listed,) = store.listed(ListingQuery(game_type=HAND), 10)
    assert listed.position == Position(True, 7, "before")
    assert store.open_count("carol") == 1


def test_an_unknown_id_is_quoted_short_in_the_error(store: TournamentStore) -> None:
    with pytest.raises(TournamentNotFound) as missing:
        store.load("x" * 70_000)
    assert str(missing.value) == (
        f"no tournament has the id '{'x' * 24}…' (70000 characters)")
    with pytest.raises(TournamentNotFound) as missing:
        store.summary("../../etc/passwd\n")
    assert str(missing.value) == "no tournament has the id '../../etc/passwd\\n'"
