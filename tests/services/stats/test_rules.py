"""The readings of the stats rules (docs/stats.md), each pinned on the stored figures: what a
move is, whose counters a round adds to, how matches of more than two sides rank, and how a
bot level seated on several sides counts and rates.

Positions are real starts of the engine (``start``) with the round's and the match's end
written out, or whole matches the engine's bots played (:mod:`tests.services.stats.matches`).
"""

from __future__ import annotations

from typing import Any

import pytest
from openskill.models import PlackettLuce

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2
from services.stats.projector import Projector
from services.stats.store import COUNTERS, MATCHES, PLAYERS, StatsStore
from tests.services.stats.checks import assert_matches_logs
from tests.services.stats.matches import HAND, HOKM, Match, delivered, play

AT_MS = 1_764_547_200_000
HOKM_GAME = common_pb2.GAME_TYPE_HOKM
HAND_GAME = common_pb2.GAME_TYPE_HAND


def _seats(*players: str) -> list[common_pb2.Player]:
    return [common_pb2.Player(player_id=player, display_name=player,
                              is_bot=player.startswith("bot:")) for player in players]


def _ending(match_id: str, game: Any, rules: Any, players: list[common_pb2.Player],
            ends: list[Any]) -> Match:
    """The engine's start of a match, then ``ends`` (game events) in order."""
    events = game.start(rules, bytes(32), players, at_ms=AT_MS)
    for body in ends:
        member = "hokm" if isinstance(body, hokm_pb2.HokmEvent) else "hand"
        event = log_pb2.Event(seq=len(events) + 1, at_ms=AT_MS + len(events))
        getattr(event, member).CopyFrom(body)
        events.append(event)
    return Match(match_id, game, events)


def _project(*matches: Match) -> StatsStore:
    store = StatsStore.open(None)
    projector = Projector(store)
    for match in matches:
        projector.project(delivered(match))
    assert_matches_logs(store, {match.game_id: match.events for match in matches})
    return store


def _counters(store: StatsStore, subject: str) -> dict[str, int]:
    return {row.counter: row.value for row in store.all_rows(COUNTERS)
            if row.subject == subject}


def _player(store: StatsStore, subject: str) -> Any:
    return next(row for row in store.all_rows(PLAYERS) if row.subject == subject)


def _round(hakem: int, winners: list[int], tricks: list[int],
           result: hokm_pb2.RoundResult.ValueType = hokm_pb2.ROUND_RESULT_WIN,
           number: int = 1) -> hokm_pb2.HokmEvent:
    return hokm_pb2.HokmEvent(round_ended=hokm_pb2.RoundEnded(
        round=number, hakem=hakem, winners=winners, tricks=tricks, result=result))


def _hokm_over(winners: list[int], scores: list[int]) -> hokm_pb2.HokmEvent:
    return hokm_pb2.HokmEvent(match_ended=hokm_pb2.HokmMatchEnded(
        winners=winners, scores=scores, server_seed=bytes(32)))


def _hand_over(winners: list[int], totals: list[int]) -> hand_pb2.HandEvent:
    return hand_pb2.HandEvent(match_ended=hand_pb2.HandMatchEnded(
        winners=winners, totals=totals, server_seed=bytes(32)))


def test_rounds_won_count_both_partners_and_as_hakem_only_the_hakems_seat() -> None:
    # docs/stats.md "Hokm": the hakem (seat 0) and partner (seat 2) win round 1, the
    # defenders (1 and 3) win round 2 by a kot.
    match = _ending("h1", HOKM, hokm_pb2.HokmRules(target_score=2),
                    _seats("ana", "babak", "cyrus", "dara"), [
                        _round(0, [0, 2], [4, 2, 3, 4]),
                        _round(0, [1, 3], [0, 6, 0, 7], hokm_pb2.ROUND_RESULT_KOT, 2),
                        _hokm_over([1, 3], [1, 3, 1, 3])])
    store = _project(match)
    assert _counters(store, "ana") == {"rounds_played": 2, "rounds_won": 1,
                                       "rounds_won_as_hakem": 1, "kots_taken": 1, "tricks": 4}
    assert _counters(store, "cyrus") == {"rounds_played": 2, "rounds_won": 1,
                                         "kots_taken": 1, "tricks": 3}
    for defender, tricks in (("babak", 8), ("dara", 11)):
        assert _counters(store, defender) == {
            "rounds_played": 2, "rounds_won": 1, "rounds_won_against_hakem": 1,
            "kots_given": 1, "tricks": tricks}


def test_a_trump_declared_from_the_pile_is_no_move_and_a_pile_take_is_the_winners() -> None:
    # docs/rules/hokm.md "Two players": with trump_2p pile_card the rules declare the trump
    # (TrumpDeclared from_pile); the trick's winner takes a pile (one move, the loser's
    # card from the other pile comes with it); with hakem_declares the hakem's
    # declaration is a move.
    for trump, declared_moves in ((hokm_pb2.TRUMP_2P_PILE_CARD, 0),
                                  (hokm_pb2.TRUMP_2P_HAKEM_DECLARES, 1)):
        rules = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=1,
                                   trump_2p=trump)
        match = play(HOKM, rules, 3, takeovers=False, seated=_seats("ana", "babak"))
        store = _project(match)
        kinds = [(event.hokm.WhichOneof("kind"), event) for event in match.events]
        declared = [e.hokm.trump_declared for k, e in kinds if k == "trump_declared"]
        assert declared and all(d.from_pile == (declared_moves == 0) for d in declared)
        for seat, subject in enumerate(("ana", "babak")):
            played = sum(1 for k, e in kinds
                         if k == "card_played" and e.hokm.card_played.seat == seat)
            taken = sum(1 for k, e in kinds
                        if k == "pile_cards_taken" and e.hokm.pile_cards_taken.winner == seat)
            by_seat = sum(1 for d in declared if d.seat == seat) * declared_moves
            row = _player(store, subject)
            assert row.own_moves + row.bot_moves == played + taken + by_seat
        assert any(k == "pile_cards_taken" for k, _ in kinds)


def _mu(store: StatsStore, subject: str) -> float:
    return float(_player(store, subject).mu)


def test_more_than_two_sides_rank_by_total_fewest_first_in_hand() -> None:
    # Three players alone: the winner (lowest total) first, then the others by total,
    # fewest first; equal totals share a rank.
    match = _ending("d3", HAND, hand_pb2.HandRules(players=3, rounds=1),
                    _seats("ana", "babak", "cyrus"), [_hand_over([1], [80, -30, 15])])
    store = _project(match)
    assert _mu(store, "babak") > _mu(store, "cyrus") > _mu(store, "ana")
    model = PlackettLuce()
    rated = model.rate([[model.rating()] for _ in range(3)], ranks=[2.0, 0.0, 1.0])
    assert [_mu(store, s) for s in ("ana", "babak", "cyrus")] == pytest.approx(
        [team[0].mu for team in rated])
    tied = _project(_ending("d4", HAND, hand_pb2.HandRules(players=4, rounds=1),
                            _seats("ana", "babak", "cyrus", "dara"),
                            [_hand_over([2], [40, 40, -30, 95])]))
    assert _mu(tied, "ana") == pytest.approx(_mu(tied, "babak"))
    assert _mu(tied, "cyrus") > _mu(tied, "ana") > _mu(tied, "dara")


def test_more_than_two_sides_rank_by_score_most_first_in_hokm() -> None:
    match = _ending("k3", HOKM, hokm_pb2.HokmRules(
        variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=7),
        _seats("ana", "babak", "cyrus"), [_hokm_over([1], [2, 7, 5])])
    store = _project(match)
    assert _mu(store, "babak") > _mu(store, "cyrus") > _mu(store, "ana")


def test_a_bot_level_on_several_seats_counts_per_seat_and_rates_once_as_partners() -> None:
    # Hokm with four players: bot:greedy on seats 0 and 2 (partners) wins.
    match = _ending("b1", HOKM, hokm_pb2.HokmRules(target_score=1),
                    _seats("bot:greedy:0", "ana", "bot:greedy:2", "babak"),
                    [_round(0, [0, 2], [5, 2, 4, 2]), _hokm_over([0, 2], [1, 0, 1, 0])])
    store = _project(match)
    bot = _player(store, "bot:greedy")
    assert (bot.played, bot.won, bot.rated) == (2, 2, 1)
    assert _counters(store, "bot:greedy") == {"rounds_played": 2, "rounds_won": 2,
                                              "rounds_won_as_hakem": 1, "tricks": 9}
    model = PlackettLuce()
    team = model.rate([[model.rating(), model.rating()], [model.rating(), model.rating()]],
                      ranks=[0.0, 1.0])
    assert bot.mu == pytest.approx(team[0][0].mu)
    history = [row for row in store.all_rows(MATCHES) if row.subject == "bot:greedy"]
    assert sorted(row.seat for row in history) == [0, 2]


def test_a_bot_level_on_both_sides_counts_per_seat_and_is_not_rated() -> None:
    # Hand with four players alone: bot:random on seats 0 and 1, opposing sides.
    match = _ending("b2", HAND, hand_pb2.HandRules(players=4, rounds=1),
                    _seats("bot:random:0", "bot:random:1", "ana", "babak"),
                    [_hand_over([0], [-30, 20, 45, 60])])
    store = _project(match)
    bot = _player(store, "bot:random")
    assert (bot.played, bot.won, bot.lost, bot.rated, bot.mu) == (2, 1, 1, 0, 0.0)
    assert _player(store, "ana").rated == 1
    partners = _project(_ending("b3", HOKM, hokm_pb2.HokmRules(target_score=1),
                                _seats("bot:basic:0", "bot:basic:1", "ana", "babak"),
                                [_hokm_over([1, 3], [0, 1, 0, 1])]))
    both = _player(partners, "bot:basic")
    assert (both.played, both.won, both.lost, both.rated) == (2, 1, 1, 0)


def test_hand_rounds_won_count_both_partners_and_a_void_round_counts_nothing() -> None:
    # docs/rules/hand.md "Scoring": seat 1 goes out with a hand (-60, the others doubled,
    # its partner 0); a void round before it (the stock ran out) scores nobody.
    match = _ending("p1", HAND, hand_pb2.HandRules(players=4, partnerships=True, rounds=1),
                    _seats("ana", "babak", "cyrus", "dara"), [
                        hand_pb2.HandEvent(round_voided=hand_pb2.RoundVoided(round=1)),
                        hand_pb2.HandEvent(round_ended=hand_pb2.HandRoundEnded(
                            round=1, went_out=1, finish=hand_pb2.HAND_FINISH_HAND,
                            points=[48, -60, 200, 0], totals=[248, -60, 248, -60])),
                        _hand_over([1, 3], [248, -60, 248, -60])])
    store = _project(match)
    assert _counters(store, "babak") == {"rounds_played": 1, "rounds_won": 1,
                                         "hand_finishes": 1, "penalty_total": -60}
    assert _counters(store, "dara") == {"rounds_played": 1, "rounds_won": 1}
    assert _counters(store, "ana") == {"rounds_played": 1, "penalty_total": 48}
