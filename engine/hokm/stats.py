"""Hokm's statistics (:mod:`engine.core.stats`): rounds, hakem rounds, kots and tricks.

Counters per seat, from ``RoundEnded``:

- ``rounds_played``, ``rounds_won``: every round the seat played, and those its side won;
- ``rounds_won_as_hakem``: rounds the seat was the hakem and its side won;
- ``rounds_won_against_hakem``: rounds the seat played against the hakem and its side won;
- ``kots_given``, ``kots_taken``: rounds its side won, or lost, without the losers taking a
  trick (kot, hakem kot, shelem: docs/rules/hokm.md "Scoring");
- ``tricks``: tricks the seat took.

Teams: partners (seats 0 and 2, 1 and 3) with four players, every seat alone with three or
two. The final ``HokmMatchEnded`` names the winners; the other teams rank by score.
"""

from __future__ import annotations

from typing import Final

from dast.v1 import hokm_pb2, log_pb2
from engine.core.stats import (
    MatchFrame,
    MatchResult,
    StatsLayout,
    Tally,
    move_by,
    ranks_by_score,
    seat_teams,
)

_KOTS: Final = frozenset({hokm_pb2.ROUND_RESULT_KOT, hokm_pb2.ROUND_RESULT_HAKEM_KOT,
                          hokm_pb2.ROUND_RESULT_SHELEM})
_VARIANTS: Final = {
    hokm_pb2.HOKM_VARIANT_UNSPECIFIED: ("4p", 4),
    hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS: ("4p", 4),
    hokm_pb2.HOKM_VARIANT_THREE_PLAYERS: ("3p", 3),
    hokm_pb2.HOKM_VARIANT_TWO_PLAYERS: ("2p", 2),
}


class HokmStats:
    """:class:`engine.core.stats.GameStats` of Hokm."""

    LAYOUT: Final = StatsLayout(counters=(
        "rounds_played", "rounds_won", "rounds_won_as_hakem", "rounds_won_against_hakem",
        "kots_given", "kots_taken", "tricks",
    ))

    def frame(self, first_event: log_pb2.Event) -> MatchFrame:
        """See :meth:`engine.core.stats.GameStats.frame` (players in their seats, after the
        ``random_partners`` seating)."""
        if first_event.WhichOneof("game") != "hokm" or (
                first_event.hokm.WhichOneof("kind") != "match_started"):
            raise ValueError(f"event seq {first_event.seq} does not start a Hokm match")
        started = first_event.hokm.match_started
        variant, seats = _VARIANTS.get(started.rules.variant, ("", 0))
        if not variant or len(started.players) != seats:
            raise ValueError(f"a Hokm match of variant {started.rules.variant} with "
                             f"{len(started.players)} players")
        order = list(started.seating) or list(range(seats))
        if sorted(order) != list(range(seats)):
            raise ValueError(f"the seating {order} is no permutation of {seats} seats")
        players = tuple(started.players[index] for index in order)
        return MatchFrame(variant, players, teams(seats))

    def tally(self, frame: MatchFrame, event: log_pb2.Event) -> Tally | None:
        """See :meth:`engine.core.stats.GameStats.tally` (moves as ``records.command_for``
        has them: a play, a declaration not from the pile, a set-aside, a pile taken)."""
        if event.WhichOneof("game") != "hokm":
            return None
        hokm = event.hokm
        kind = hokm.WhichOneof("kind")
        if kind == "card_played":
            return move_by(hokm.card_played.seat)
        if kind == "round_ended":
            return Tally(counts=_round_counts(hokm.round_ended, len(frame.players)))
        if kind == "trump_declared":
            declared = hokm.trump_declared
            return None if declared.from_pile else move_by(declared.seat)
        if kind == "cards_set_aside":
            return move_by(hokm.cards_set_aside.seat)
        if kind == "pile_cards_taken":
            return move_by(hokm.pile_cards_taken.winner)
        if kind == "match_ended":
            return Tally(result=_result(frame, hokm.match_ended))
        return None


def teams(seats: int) -> tuple[tuple[int, ...], ...]:
    """The sides of a Hokm match of ``seats`` players (docs/rules/hokm.md "Seats and
    teams"): partners opposite with four, every seat alone with three or two."""
    return seat_teams(seats, partners=seats == 4)


def _result(frame: MatchFrame, ended: hokm_pb2.HokmMatchEnded) -> MatchResult:
    seats = len(frame.players)
    winners = frozenset(seat for seat in ended.winners if seat < seats)
    scores = [ended.scores[seat] if seat < len(ended.scores) else 0 for seat in range(seats)]
    team_scores = tuple((1 << 32) if set(team) & winners else max(scores[seat] for seat in team)
                        for team in frame.teams)
    return MatchResult(winners, ranks_by_score(team_scores, higher_is_better=True))


def _round_counts(ended: hokm_pb2.RoundEnded, seats: int) -> tuple[tuple[int, str, int], ...]:
    winners = set(ended.winners)
    hakem = ended.hakem
    hakem_won = hakem in winners
    counts: list[tuple[int, str, int]] = []
    for seat in range(seats):
        won = seat in winners
        counts.append((seat, "rounds_played", 1))
        if won:
            counts.append((seat, "rounds_won", 1))
            if seat == hakem:
                counts.append((seat, "rounds_won_as_hakem", 1))
            elif not hakem_won:
                counts.append((seat, "rounds_won_against_hakem", 1))
        if ended.result in _KOTS:
            counts.append((seat, "kots_given" if won else "kots_taken", 1))
        tricks = ended.tricks[seat] if seat < len(ended.tricks) else 0
        if tricks:
            counts.append((seat, "tricks", tricks))
    return tuple(counts)


STATS: Final = HokmStats()
