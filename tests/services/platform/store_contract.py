"""The event store contract, run against every backend (ES ``AggregateRecorderTestCase``).

Subclasses provide a ``store`` fixture (and ``make_rival_store`` for a second handle on the
same data); ``test_store.py`` binds it to memory, SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from services.platform.store import (
    AppendResult,
    ConcurrencyConflict,
    GameExists,
    GameNotFound,
    InvalidEntries,
    LogEntry,
    OutboxStore,
    SeatName,
    SubmitsWrites,
)
from tests.services.platform.helpers import HOKM, continue_log, make_entries, seqs


def _race_appends(
    handles: list[OutboxStore], batches: list[list[LogEntry]]
) -> list[AppendResult | ConcurrencyConflict]:
    """Let ``handles[i]`` append ``batches[i]`` to game g1 all at once (threads, one barrier)."""
    barrier = threading.Barrier(len(handles))

    def append(index: int) -> AppendResult | ConcurrencyConflict:
        barrier.wait()
        try:
            return handles[index].append("g1", batches[index], command_id=None)
        except ConcurrencyConflict as conflict:
            return conflict

    with ThreadPoolExecutor(len(handles)) as pool:
        return list(pool.map(append, range(len(handles))))


class EventStoreContract:
    """What every :class:`~services.platform.store.EventStore` must do (docs/architecture.md "Event
    store and bus")."""

    @pytest.fixture
    def rival(self, store: OutboxStore) -> Callable[[], OutboxStore]:
        """A second handle on the store's data, as another replica would hold (default: same)."""
        return lambda: store

    def test_create_append_load_round_trip(self, store: OutboxStore) -> None:
        start = make_entries(1, 2)
        store.create_game("g1", HOKM, start)
        more = continue_log(start, 3)
        result = store.append("g1", more, command_id="c1", sender="p1")
        assert result == AppendResult(more, duplicate=False)
        assert store.load("g1") == start + more
        assert store.last_seq("g1") == 5
        assert store.game_type("g1") == HOKM

    def test_load_after_seq_returns_only_later_entries(self, store: OutboxStore) -> None:
        log = make_entries(1, 6)
        store.create_game("g1", HOKM, log)
        assert seqs(store.load("g1", after_seq=4)) == [5, 6]
        assert store.load("g1", after_seq=6) == []
        assert store.load("g1", after_seq=0) == log

    def test_game_may_start_with_an_empty_log(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, [])
        assert store.last_seq("g1") == 0
        store.append("g1", make_entries(1, 1), command_id=None)
        assert store.last_seq("g1") == 1

    def test_games_are_independent(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, make_entries(1, 3))
        store.create_game("g2", 2, make_entries(1, 1, at_ms=7))
        assert seqs(store.load("g1")) == [1, 2, 3]
        assert seqs(store.load("g2")) == [1]
        assert store.game_type("g2") == 2

    def test_create_existing_game_raises_game_exists(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, make_entries(1, 1))
        with pytest.raises(GameExists):
            store.create_game("g1", HOKM, make_entries(1, 1))

    def test_unknown_game_raises_game_not_found(self, store: OutboxStore) -> None:
        with pytest.raises(GameNotFound):
            store.load("nope")
        with pytest.raises(GameNotFound):
            store.game_type("nope")
        with pytest.raises(GameNotFound):
            store.last_seq("nope")
        with pytest.raises(GameNotFound):
            store.append("nope", make_entries(1, 1), command_id="c1", sender="p1")

    def test_log_must_start_at_seq_one(self, store: OutboxStore) -> None:
        with pytest.raises(InvalidEntries):
            store.create_game("g1", HOKM, make_entries(2, 1))
        with pytest.raises(GameNotFound):  # nothing was written
            store.last_seq("g1")

    def test_append_must_continue_seq_without_gap(self, store: OutboxStore) -> None:
        log = make_entries(1, 2)
        store.create_game("g1", HOKM, log)
        with pytest.raises(InvalidEntries):
            store.append("g1", make_entries(4, 1, log[-1].hash), command_id=None)
        gap_inside = continue_log(log, 3)
        del gap_inside[1]
        with pytest.raises(InvalidEntries):
            store.append("g1", gap_inside, command_id=None)
        assert store.last_seq("g1") == 2

    def test_append_rejects_hash_that_does_not_chain(self, store: OutboxStore) -> None:
        # docs/architecture.md "Tamper evidence": hash(n) = sha256(hash(n-1) || event n).
        log = make_entries(1, 2)
        store.create_game("g1", HOKM, log)
        forged = continue_log(log, 2)
        forged[1].hash = bytes(32)
        with pytest.raises(InvalidEntries):
            store.append("g1", forged, command_id=None)
        off_chain = make_entries(3, 1, prev_hash=b"\x01" * 32)
        with pytest.raises(InvalidEntries):
            store.append("g1", off_chain, command_id=None)
        assert store.load("g1") == log  # all-or-nothing

    def test_append_of_taken_seq_raises_concurrency_conflict(self, store: OutboxStore) -> None:
        log = make_entries(1, 2)
        store.create_game("g1", HOKM, log)
        store.append("g1", continue_log(log, 1, at_ms=5), command_id=None)
        with pytest.raises(ConcurrencyConflict):
            store.append("g1", continue_log(log, 1, at_ms=9), command_id=None)

    def test_empty_append_is_rejected(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, [])
        with pytest.raises(InvalidEntries):
            store.append("g1", [], command_id="c1", sender="p1")

    def test_repeated_command_id_returns_first_result_and_appends_nothing(
        self, store: OutboxStore
    ) -> None:
        log = make_entries(1, 1)
        store.create_game("g1", HOKM, log)
        first = continue_log(log, 2)
        assert store.append("g1", first, command_id="c1", sender="p1").duplicate is False
        # A retry computed from a newer state (different events, later seqs) changes nothing.
        retry = continue_log(log + first, 1)
        repeated = store.append("g1", retry, command_id="c1", sender="p1")
        assert repeated == AppendResult(first, duplicate=True)
        assert store.last_seq("g1") == 3
        # command ids are per game
        store.create_game("g2", HOKM, [])
        result = store.append("g2", make_entries(1, 1), command_id="c1", sender="p1")
        assert result.duplicate is False

    def test_command_ids_belong_to_their_sender(self, store: OutboxStore) -> None:
        # Another sender's use of the same id is a command of its own, never a duplicate: a
        # squatter who took a bot's next id first cannot make the bot's command vanish.
        log = make_entries(1, 1)
        store.create_game("g1", HOKM, log)
        squatted = continue_log(log, 1)
        store.append("g1", squatted, command_id="bot:g1:2", sender="player:host")
        own = continue_log(log + squatted, 2)
        result = store.append("g1", own, command_id="bot:g1:2", sender="service:bots#1")
        assert result == AppendResult(own, duplicate=False)
        # each sender's retry is answered with its own first result
        retry = continue_log(log + squatted + own, 1)
        assert store.append("g1", retry, command_id="bot:g1:2", sender="player:host") == (
            AppendResult(squatted, duplicate=True)
        )
        assert store.append("g1", retry, command_id="bot:g1:2", sender="service:bots#1") == (
            AppendResult(own, duplicate=True)
        )
        assert store.find_command("g1", "player:host", "bot:g1:2") == AppendResult(
            squatted, duplicate=True
        )
        assert store.find_command("g1", "service:bots#1", "bot:g1:2") == AppendResult(
            own, duplicate=True
        )
        assert store.find_command("g1", "service:bots#2", "bot:g1:2") is None
        assert store.last_seq("g1") == 4

    def test_a_command_id_without_its_sender_is_refused(self, store: OutboxStore) -> None:
        log = make_entries(1, 1)
        store.create_game("g1", HOKM, log)
        with pytest.raises(ValueError, match="sender"):
            store.append("g1", continue_log(log, 1), command_id="c1")
        assert store.last_seq("g1") == 1

    def test_concurrent_appends_one_wins_the_rest_conflict(
        self, store: OutboxStore, rival: Callable[[], OutboxStore]
    ) -> None:
        # docs/architecture.md "Event store and bus": the primary key (game_id, seq) is the
        # optimistic-concurrency check.
        writers = 4
        log = make_entries(1, 1)
        store.create_game("g1", HOKM, log)
        handles = [store] + [rival() for _ in range(writers - 1)]
        for _ in range(3):
            log = store.load("g1")
            rivals = [continue_log(log, 2, at_ms=100 * (i + 1)) for i in range(writers)]
            outcomes = _race_appends(handles, rivals)
            winners = [i for i, outcome in enumerate(outcomes) if isinstance(outcome, AppendResult)]
            assert len(winners) == 1, outcomes
            assert sum(isinstance(o, ConcurrencyConflict) for o in outcomes) == writers - 1
            assert store.load("g1") == log + rivals[winners[0]]

    def test_concurrent_retries_of_one_command_append_once(
        self, store: OutboxStore, rival: Callable[[], OutboxStore]
    ) -> None:
        log = make_entries(1, 1)
        store.create_game("g1", HOKM, log)
        batch = continue_log(log, 2)
        handles = [store, rival(), rival()]
        barrier = threading.Barrier(len(handles))

        def retry(handle: OutboxStore) -> AppendResult:
            barrier.wait()
            return handle.append("g1", batch, command_id="same", sender="p1")

        with ThreadPoolExecutor(len(handles)) as pool:
            results = list(pool.map(retry, handles))
        assert sorted(result.duplicate for result in results) == [False, True, True]
        assert all(result.entries == batch for result in results)
        assert store.load("g1") == log + batch

    def test_returned_entries_are_copies(self, store: OutboxStore) -> None:
        log = make_entries(1, 1)
        store.create_game("g1", HOKM, log)
        store.load("g1")[0].event.at_ms = 999
        assert store.load("g1") == log

    def test_outbox_claims_unrelayed_events_in_seq_order(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, make_entries(1, 3))
        store.create_game("g2", HOKM, make_entries(1, 1))
        claimed = store.claim_unrelayed(max_events=2)
        assert [(game.game_id, game.game_type, seqs(game.entries)) for game in claimed] == [
            ("g1", HOKM, [1, 2]),
            ("g2", HOKM, [1]),
        ]
        # claimed games are leased: nobody else claims them meanwhile
        assert store.claim_unrelayed() == []
        store.mark_relayed("g1", 2)
        store.release(["g2"])
        again = store.claim_unrelayed()
        assert [(game.game_id, seqs(game.entries)) for game in again] == [("g1", [3]), ("g2", [1])]
        store.mark_relayed("g1", 3)
        store.mark_relayed("g2", 1)
        assert store.claim_unrelayed(lease_ms=0) == []
        store.append("g2", continue_log(store.load("g2"), 1), command_id=None)
        assert [seqs(game.entries) for game in store.claim_unrelayed()] == [[2]]

    def test_expired_claim_can_be_taken_over(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, make_entries(1, 1))
        assert len(store.claim_unrelayed(lease_ms=0)) == 1
        assert len(store.claim_unrelayed()) == 1

    def test_renewing_extends_only_running_claims(self, store: OutboxStore) -> None:
        # A relay renews what it holds; a renewal never revives a claim that ended or ran out.
        for game_id in ("held", "marked", "released", "lapsed"):
            store.create_game(game_id, HOKM, make_entries(1, 1))
        assert len(store.claim_unrelayed(lease_ms=60_000)) == 4
        store.mark_relayed("marked", 1)
        store.release(["released"])
        store.release(["lapsed"], interrupted=True)  # as a dead relay's lease looks
        store.renew_claims(["held", "marked", "released", "lapsed", "no-such-game"],
                           lease_ms=60_000)
        # the running claim still holds; the others are free to claim again (not revived)
        assert sorted(game.game_id for game in store.claim_unrelayed()) == ["lapsed", "released"]

    def test_a_renewed_claim_outlives_its_first_lease(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, make_entries(1, 1))
        assert len(store.claim_unrelayed(lease_ms=300)) == 1
        store.renew_claims(["g1"], lease_ms=60_000)
        time.sleep(0.4)  # the first lease has run out by now; the renewed one has not
        assert store.claim_unrelayed() == []

    def test_claims_say_when_the_previous_one_ended_unfinished(self, store: OutboxStore) -> None:
        # A relay that died holding a claim, or whose publish failed midway, may have put some
        # events on the bus without recording it: the next claim tells the relay to look.
        store.create_game("g1", HOKM, make_entries(1, 2))
        store.create_game("g2", HOKM, make_entries(1, 1))
        first = store.claim_unrelayed(lease_ms=0)  # its relay "dies": the lease runs out
        assert [(game.game_id, game.interrupted) for game in first] == [
            ("g1", False), ("g2", False),
        ]
        taken_over = store.claim_unrelayed()
        assert [(game.game_id, game.interrupted) for game in taken_over] == [
            ("g1", True), ("g2", True),
        ]
        store.release(["g1"], interrupted=True)  # failed midway
        store.release(["g2"])  # never tried
        again = store.claim_unrelayed()
        assert [(game.game_id, game.interrupted) for game in again] == [
            ("g1", True), ("g2", False),
        ]
        store.mark_relayed("g1", 1)  # a clean end clears the mark
        store.release(["g2"])
        assert [(game.game_id, game.interrupted) for game in store.claim_unrelayed()] == [
            ("g1", False), ("g2", False),
        ]

    def test_find_command_returns_what_the_command_appended(self, store: OutboxStore) -> None:
        # docs/architecture.md "Event store and bus": a command_id makes a retried command append
        # nothing;
        # the service asks find_command whether a refused command had in fact been applied.
        log = make_entries(1, 1)
        store.create_game("g1", HOKM, log)
        assert store.find_command("g1", "p1", "c1") is None
        batch = continue_log(log, 2)
        store.append("g1", batch, command_id="c1", sender="p1")
        assert store.find_command("g1", "p1", "c1") == AppendResult(batch, duplicate=True)
        assert store.find_command("g1", "p2", "c1") is None  # command ids are per sender
        store.create_game("g2", HOKM, [])
        assert store.find_command("g2", "p1", "c1") is None  # and per game
        with pytest.raises(GameNotFound):
            store.find_command("nope", "p1", "c1")

    def test_relayed_writes_leave_nothing_for_the_relay(self, store: OutboxStore) -> None:
        # The in-process bus path: the caller publishes itself right after the commit.
        log = make_entries(1, 2)
        store.create_game("g1", HOKM, log, relayed=True)
        assert store.claim_unrelayed(lease_ms=0) == []
        store.append("g1", continue_log(log, 1), command_id="c1", sender="p1", relayed=True)
        assert store.claim_unrelayed(lease_ms=0) == []
        store.append("g1", continue_log(store.load("g1"), 1), command_id=None)
        assert [seqs(game.entries) for game in store.claim_unrelayed(lease_ms=0)] == [[4]]

    def test_relayed_append_keeps_a_lagging_outbox_for_the_relay(self, store: OutboxStore) -> None:
        # Events the relay still owes are never skipped by a later relayed append.
        log = make_entries(1, 2)
        store.create_game("g1", HOKM, log)
        store.append("g1", continue_log(log, 1), command_id=None, relayed=True)
        assert [seqs(game.entries) for game in store.claim_unrelayed()] == [[1, 2, 3]]

    def test_many_concurrent_appends_to_many_games_each_get_their_own_outcome(
        self, store: OutboxStore
    ) -> None:
        # Group commit: writes of many games share transactions, outcomes stay per append.
        games = 12
        logs = {f"g{n}": make_entries(1, 1) for n in range(games)}
        for game_id, log in logs.items():
            store.create_game(game_id, HOKM, log)
        batches = {game_id: continue_log(log, 1) for game_id, log in logs.items()}
        stale = {game_id: continue_log(log, 1, at_ms=7) for game_id, log in logs.items()}

        def append(game_id: str, entries: list[LogEntry]) -> AppendResult | ConcurrencyConflict:
            try:
                return store.append(game_id, entries, command_id=None)
            except ConcurrencyConflict as conflict:
                return conflict

        with ThreadPoolExecutor(8) as pool:
            firsts = list(pool.map(append, batches, batches.values()))
            seconds = list(pool.map(append, stale, stale.values()))
        assert all(isinstance(outcome, AppendResult) for outcome in firsts)
        assert all(isinstance(outcome, ConcurrencyConflict) for outcome in seconds)
        for game_id, log in logs.items():
            assert store.load(game_id) == log + batches[game_id]

    def test_mark_relayed_many_marks_each_game_up_to_its_seq(self, store: OutboxStore) -> None:
        store.create_game("g1", HOKM, make_entries(1, 3))
        store.create_game("g2", HOKM, make_entries(1, 2))
        assert len(store.claim_unrelayed()) == 2
        store.mark_relayed_many([("g1", 2), ("g2", 2)])
        again = store.claim_unrelayed()
        assert [(game.game_id, seqs(game.entries)) for game in again] == [("g1", [3])]
        store.mark_relayed_many([("g1", 3), ("g2", 1)])  # g2's watermark never moves back
        store.mark_relayed_many([])
        assert store.claim_unrelayed(lease_ms=0) == []

    def test_seat_names_are_kept_with_the_game_and_an_erasure_blanks_them(
        self, store: OutboxStore
    ) -> None:
        names = [SeatName(0, "p0", "Ali"), SeatName(1, "p1", "Sara"), SeatName(2, "p0", "Ali")]
        store.create_game("g1", HOKM, make_entries(1, 2), seat_names=names)
        store.create_game("g2", HOKM, make_entries(1, 1), seat_names=[SeatName(0, "p1", "Sara")])
        store.create_game("old", HOKM, make_entries(1, 1))  # its log holds its names
        with pytest.raises(GameExists):  # a refused creation changes nobody's names
            store.create_game("g1", HOKM, make_entries(1, 1),
                              seat_names=[SeatName(0, "p9", "Mallory")])
        assert store.seat_names("g1") == names
        assert store.seat_names("old") == []
        assert store.seat_names("nowhere") == []

        assert store.erase_names("p0") == 2
        assert store.erase_names("p0") == 0  # a second time changes nothing
        assert store.seat_names("g1") == [
            SeatName(0, "p0", "", deleted=True), SeatName(1, "p1", "Sara"),
            SeatName(2, "p0", "", deleted=True)]
        assert store.seat_names("g2") == [SeatName(0, "p1", "Sara")]
        # The log itself is untouched.
        assert store.load("g1") == make_entries(1, 2)

    async def test_seat_names_written_by_the_async_creation(self, store: OutboxStore) -> None:
        if not isinstance(store, SubmitsWrites):
            pytest.skip("this store has no awaited writes")
        await store.create_game_async("g1", HOKM, make_entries(1, 1),
                                      seat_names=[SeatName(0, "p0", "Ali")])
        assert store.seat_names("g1") == [SeatName(0, "p0", "Ali")]
