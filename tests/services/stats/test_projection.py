"""The projection equals an independent recomputation from the logs, whatever the delivery:
interleaved games, repeated deliveries, out-of-order events, gaps repaired from the whole
log, a restart that loses every buffer, and a batch that fails half-way."""

from __future__ import annotations

import concurrent.futures
import random
import threading

import pytest

from dast.v1 import common_pb2, hand_pb2, log_pb2
from engine.core.protocol import Game
from engine.core.stats import GameStats, stats_of
from services.platform.bus import Published
from services.stats import store as store_module
from services.stats.projector import MAX_BUFFERED, Delivery, Projector, periods_of, subject_of
from services.stats.store import COUNTERS, PLAYERS, PROGRESS, StatsStore
from tests.services.stats.checks import assert_matches_logs
from tests.services.stats.matches import HAND, HOKM, Match, corpus, delivered

MATCHES = corpus(2)  # every variant of both games, twice: ~2,000 events
LOGS = {match.game_id: match.events for match in MATCHES}


def _interleaved(seed: int, matches: list[Match] = MATCHES) -> list[Delivery]:
    """Every match's events in order, the matches interleaved at random."""
    draw = random.Random(seed)
    queues = [delivered(match) for match in matches]
    mixed = []
    while queues:
        queue = draw.choice(queues)
        mixed.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    return mixed


def _stats(game: Game) -> GameStats:
    stats = stats_of(game)
    assert stats is not None
    return stats


def _project(projector: Projector, deliveries: list[Delivery], batch: int) -> int:
    applied = 0
    for start in range(0, len(deliveries), batch):
        applied += projector.project(deliveries[start:start + batch]).applied
    return applied


@pytest.mark.parametrize("batch", [7, 37, 5_000])
def test_interleaved_games_project_to_the_recomputation(batch: int) -> None:
    store = StatsStore.open(None)
    projector = Projector(store)
    deliveries = _interleaved(batch)
    assert _project(projector, deliveries, batch) == len(deliveries)
    expected = assert_matches_logs(store, LOGS)
    assert len(expected.matches) == sum(len(_stats(m.game).frame(m.events[0]).players)
                                        for m in MATCHES)
    assert projector.buffered == 0


def test_repeated_deliveries_count_once() -> None:
    store = StatsStore.open(None)
    projector = Projector(store)
    draw = random.Random(5)
    deliveries = _interleaved(5)
    repeated = []
    for index, delivery in enumerate(deliveries):
        repeated.append(delivery)
        if draw.random() < 0.3:  # again, soon or much later (a redelivery after a crash)
            later = min(len(repeated), index + draw.choice([0, 3, 400]))
            repeated.insert(later, Delivery(delivery.published))
    outcome_applied = _project(projector, repeated, 64)
    assert outcome_applied == len(deliveries)
    _project(projector, deliveries, 500)  # the whole stream once more: all repeats
    assert_matches_logs(store, LOGS)


def test_out_of_order_events_are_buffered_then_applied_in_seq_order() -> None:
    store = StatsStore.open(None)
    projector = Projector(store)
    draw = random.Random(11)
    deliveries = _interleaved(11)
    shuffled = []
    for start in range(0, len(deliveries), 25):  # reordered within windows of 25
        window = deliveries[start:start + 25]
        draw.shuffle(window)
        shuffled.extend(window)
    settled: list[Delivery] = []
    for start in range(0, len(shuffled), 10):
        settled.extend(projector.project(shuffled[start:start + 10]).settled)
    assert projector.buffered == 0
    assert sorted(map(id, settled)) == sorted(map(id, shuffled))  # each acknowledged once
    assert_matches_logs(store, LOGS)


def test_a_gap_is_repaired_from_the_whole_log_once_the_final_event_is_known() -> None:
    store = StatsStore.open(None)
    projector = Projector(store)
    draw = random.Random(3)
    deliveries = _interleaved(3)
    lost = {id(d) for d in deliveries
            if d.published.entry.event.seq > 1 and draw.random() < 0.05}
    kept = [d for d in deliveries if id(d) not in lost]
    to_repair: set[str] = set()
    for start in range(0, len(kept), 50):
        to_repair |= projector.project(kept[start:start + 50]).repair
    gapped = {d.published.game_id for d in deliveries if id(d) in lost}
    final_lost = {d.published.game_id for d in deliveries
                  if id(d) in lost and d.published.entry.event.seq == len(
                      LOGS[d.published.game_id])}
    assert to_repair == gapped - final_lost and projector.buffered > 0
    # A game whose final event was lost waits, unfinished: the service repairs those when
    # it starts (and any game when its final event comes again).
    assert set(store.unfinished_games()) == gapped
    for game_id in sorted(gapped):  # the repair: the whole log, as ExportLog gives it
        match = next(m for m in MATCHES if m.game_id == game_id)
        outcome = projector.project(delivered(match))
        assert game_id in outcome.finished
    assert projector.buffered == 0
    assert_matches_logs(store, LOGS)


def test_a_restart_loses_buffers_but_redelivery_completes_the_projection() -> None:
    store = StatsStore.open(None)
    deliveries = _interleaved(8)
    cut = len(deliveries) // 2
    first = Projector(store)
    first.project(deliveries[:cut][::-1][:300])  # out of order: much of it buffered
    first.project(deliveries[:cut])
    # The process dies: its buffers are gone. What was not acknowledged comes again.
    second = Projector(store)
    _project(second, deliveries[cut - 200:], 100)
    assert_matches_logs(store, LOGS)


def test_a_batch_that_fails_half_way_stores_nothing_and_can_be_retried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = StatsStore.open(None)
    projector = Projector(store)
    deliveries = _interleaved(2)
    projector.project(deliveries[:400])
    before = (store.all_rows(PROGRESS), store.all_rows(PLAYERS))

    def broken(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store_module.StatsStore, "_write_players", broken)
    with pytest.raises(OSError):
        projector.project(deliveries[400:900])
    assert (store.all_rows(PROGRESS), store.all_rows(PLAYERS)) == before
    monkeypatch.undo()
    projector.project(deliveries[400:900])
    projector.project(deliveries[900:])
    assert_matches_logs(store, LOGS)


def test_a_game_buffering_too_much_behind_a_gap_asks_for_repair() -> None:
    store = StatsStore.open(None)
    projector = Projector(store)
    match = MATCHES[0]
    published = delivered(match)[1]  # seq 2 without seq 1
    many = [Delivery(Published(published.published.game_type, match.game_id,
                               log_pb2.LogEntry(event=log_pb2.Event(seq=seq))))
            for seq in range(2, MAX_BUFFERED + 3)]
    assert match.game_id in projector.project(many).repair


def test_subjects_and_periods() -> None:
    assert subject_of(common_pb2.Player(player_id="bot:expert:2", is_bot=True)) == "bot:expert"
    assert subject_of(common_pb2.Player(player_id="ana")) == "ana"
    assert subject_of(common_pb2.Player(player_id="x-1", display_name="greedy",
                                        is_bot=True)) == "bot:greedy"
    # 2026-01-01 is a Thursday of ISO week 1 of 2026; 2027-01-01 is in week 53 of 2026.
    assert periods_of(1_767_225_600_000) == ("W2026-01", "M2026-01")
    assert periods_of(1_798_761_600_000) == ("W2026-53", "M2027-01")


def test_the_moves_the_stats_count_are_the_commands_the_games_record() -> None:
    # Two layers answer "whose move is this event": the game's command_for (the audit's)
    # and its stats' cheap reading. They must agree on every event of every variant.
    compared = 0
    for match in MATCHES:
        stats = stats_of(match.game)
        assert stats is not None
        frame = stats.frame(match.events[0])
        for event in match.events:
            if event.HasField("seat_control"):
                continue
            command = match.game.command_for(event)
            tally = stats.tally(frame, event)
            assert (command.seat if command is not None else None) == (
                tally.mover if tally is not None else None), event
            compared += 1
    assert compared > 1_000


def _one_round_hand(game_id: str, players: list[str], went_out: int, points: list[int],
                    at_ms: int) -> Match:
    """A two-player Hand match of one round, dealt by the engine, whose round ends with
    ``points`` (the seat that went out scores -30: docs/rules/hand.md "Scoring")."""
    seats = [common_pb2.Player(player_id=player, is_bot=player.startswith("bot:"))
             for player in players]
    events = HAND.start(hand_pb2.HandRules(players=2, rounds=1), bytes(32), seats,
                        at_ms=at_ms)
    seq = len(events)
    events.append(log_pb2.Event(seq=seq + 1, at_ms=at_ms + 1, hand=hand_pb2.HandEvent(
        round_ended=hand_pb2.HandRoundEnded(round=1, went_out=went_out, points=points,
                                            totals=points))))
    winner = points.index(min(points))
    events.append(log_pb2.Event(seq=seq + 2, at_ms=at_ms + 2, hand=hand_pb2.HandEvent(
        match_ended=hand_pb2.HandMatchEnded(winners=[winner], totals=points,
                                            server_seed=bytes(32)))))
    return Match(game_id, HAND, events)


def test_a_signed_counter_adding_up_to_zero_keeps_its_row_at_zero() -> None:
    # Hand's penalties are signed: ana goes out in one match (-30) and keeps 30 points in
    # the other. Her penalty_total is 0, stored as a row of 0 (a row exists once a non-zero
    # amount was added), and the recomputation has the same key at 0: the comparison reads
    # every row, zeros included (it once dropped zero rows and failed on such draws).
    matches = [_one_round_hand("h1", ["ana", "bot:greedy:1"], 0, [-30, 12], 1_764_547_200_000),
               _one_round_hand("h2", ["bot:random:0", "ana"], 0, [-30, 30], 1_764_550_800_000)]
    store = StatsStore.open(None)
    projector = Projector(store)
    for match in matches:
        projector.project(delivered(match))
    key = ("ana", common_pb2.GAME_TYPE_HAND, "2p", "penalty_total")
    stored = {(r.subject, r.game_type, r.variant, r.counter): r.value
              for r in store.all_rows(COUNTERS)}
    assert stored[key] == 0
    expected = assert_matches_logs(store, {match.game_id: match.events for match in matches})
    assert expected.counters[key] == 0


def test_a_reply_never_shows_a_batch_half_read_while_the_projection_writes() -> None:
    # A seat takes a trick with one of its own cards, so on any one snapshot a subject's
    # Hokm tricks are at most its moves. The player's figures and counters are read
    # together; read apart, a batch committed between the two reads showed counters
    # ahead of the moves.
    store = StatsStore.open(None)
    projector = Projector(store)
    hokm = [match for match in MATCHES if match.game is HOKM]
    deliveries = _interleaved(4, hokm)
    subjects = sorted({subject_of(player) for match in hokm
                       for player in _stats(match.game).frame(match.events[0]).players})
    writing = threading.Event()
    writing.set()
    seen: list[tuple[int, int]] = []

    def read_all() -> None:
        while writing.is_set():
            for subject in subjects:
                for row, counted in store.player_figures(subject, common_pb2.GAME_TYPE_HOKM):
                    moves = row.own_moves + row.bot_moves
                    seen.append((counted.get("tricks", 0), moves))
                    assert counted.get("tricks", 0) <= moves, (subject, row.variant)

    reader = concurrent.futures.ThreadPoolExecutor(1)
    try:
        reading = reader.submit(read_all)
        _project(projector, deliveries, 3)
        writing.clear()
        reading.result(timeout=120)
    finally:
        writing.clear()
        reader.shutdown()
    assert any(tricks for tricks, _ in seen)
    assert_matches_logs(store, {match.game_id: match.events for match in hokm})
