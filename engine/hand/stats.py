"""Hand's statistics (:mod:`engine.core.stats`): rounds won, "hand" finishes, penalties.

Counters per seat, from ``HandRoundEnded`` (a voided round counts for nothing):

- ``rounds_played``: rounds the seat played to the end;
- ``rounds_won``: rounds the seat went out in, or (partnerships) its partner did;
- ``hand_finishes``: rounds the seat went out with a hand (docs/rules/hand.md);
- ``penalty_total``: the sum of the seat's figures (``points``), so that the mean penalty
  is ``penalty_total / rounds_played``.

Teams: the partnerships (seats 0 and 2, 1 and 3) when the rules have them, else every seat
alone. The final ``HandMatchEnded`` names the winners (the lowest total); the other teams
rank by total, lower first.
"""

from __future__ import annotations

from typing import Final

from dast.v1 import hand_pb2, log_pb2
from engine.core.stats import (
    MatchFrame,
    MatchResult,
    Mean,
    StatsLayout,
    Tally,
    move_by,
    ranks_by_score,
    seat_teams,
)


class HandStats:
    """:class:`engine.core.stats.GameStats` of Hand."""

    LAYOUT: Final = StatsLayout(
        counters=("rounds_played", "rounds_won", "hand_finishes", "penalty_total"),
        means=(Mean("mean_penalty", total="penalty_total", count="rounds_played"),),
    )

    def frame(self, first_event: log_pb2.Event) -> MatchFrame:
        """See :meth:`engine.core.stats.GameStats.frame`."""
        if first_event.WhichOneof("game") != "hand" or (
                first_event.hand.WhichOneof("kind") != "match_started"):
            raise ValueError(f"event seq {first_event.seq} does not start a Hand match")
        started = first_event.hand.match_started
        seats = len(started.players)
        if not 2 <= seats <= 4 or started.rules.players != seats:
            raise ValueError(f"a Hand match of {started.rules.players} players "
                             f"seating {seats}")
        sides = teams(started.rules, seats)
        variant = f"{seats}p" + ("-partnerships" if len(sides) < seats else "")
        return MatchFrame(variant, tuple(started.players), sides)

    def tally(self, frame: MatchFrame, event: log_pb2.Event) -> Tally | None:
        """See :meth:`engine.core.stats.GameStats.tally` (moves as ``command_for`` has
        them: a draw, melds, a lay-off, a joker retrieved, a discard)."""
        if event.WhichOneof("game") != "hand":
            return None
        payload = event.hand
        kind = payload.WhichOneof("kind")
        if kind is None:
            return None
        if kind in _MOVES:
            seat: int = getattr(payload, kind).seat
            return move_by(seat)
        if kind == "round_ended":
            return Tally(counts=_round_counts(frame, payload.round_ended, len(frame.players)))
        if kind == "match_ended":
            return Tally(result=_result(frame, payload.match_ended))
        return None


_MOVES: Final = frozenset({"card_drawn", "melds_laid", "card_laid_off", "joker_retrieved",
                           "card_discarded"})
"""The events a player's command causes (``engine.hand.command_for``)."""


def teams(rules: hand_pb2.HandRules, seats: int) -> tuple[tuple[int, ...], ...]:
    """The sides of a Hand match of ``seats`` players (docs/rules/hand.md): the two
    partnerships when the rules have them (four players only), else every seat alone."""
    return seat_teams(seats, partners=rules.partnerships)


def _result(frame: MatchFrame, ended: hand_pb2.HandMatchEnded) -> MatchResult:
    seats = len(frame.players)
    winners = frozenset(seat for seat in ended.winners if seat < seats)
    totals = [ended.totals[seat] if seat < len(ended.totals) else 0 for seat in range(seats)]
    team_totals = tuple(-(1 << 32) if set(team) & winners else min(totals[seat] for seat in team)
                        for team in frame.teams)
    return MatchResult(winners, ranks_by_score(team_totals, higher_is_better=False))


def _round_counts(frame: MatchFrame, ended: hand_pb2.HandRoundEnded,
                  seats: int) -> tuple[tuple[int, str, int], ...]:
    team_of = {seat: team for team in frame.teams for seat in team}
    winning_team = team_of.get(ended.went_out, ())
    counts: list[tuple[int, str, int]] = []
    for seat in range(seats):
        counts.append((seat, "rounds_played", 1))
        if seat in winning_team:
            counts.append((seat, "rounds_won", 1))
        if seat == ended.went_out and ended.finish == hand_pb2.HAND_FINISH_HAND:
            counts.append((seat, "hand_finishes", 1))
        penalty = ended.points[seat] if seat < len(ended.points) else 0
        if penalty:
            counts.append((seat, "penalty_total", penalty))
    return tuple(counts)


STATS: Final = HandStats()
