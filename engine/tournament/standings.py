"""The standings: every entrant ranked from its :class:`~engine.tournament.model.Record`.

The order (docs/tournaments.md "Standings and tie-breaks"):

1. knockout only: still in first, then by the round an entrant went out in, latest first;
2. match points, most first;
3. the tie-breaks of the options, in their order (points count down in a lower-wins game);
4. the lot drawn at the start.

The lot is a strict order, so every line has its own rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.tournament.model import (
    Format,
    Record,
    Standing,
    TieBreak,
    TournamentOptions,
)


def opponents_score(records: Mapping[str, Record], entrant_id: str) -> int:
    """The sum of the match points of every entrant ``entrant_id`` met (once per meeting)."""
    return sum(
        records[opponent].match_points
        for opponent in records[entrant_id].opponents
        if opponent in records
    )


def compute_standings(
    options: TournamentOptions,
    records: Mapping[str, Record],
    lot: Sequence[str],
    *,
    eliminated: Mapping[str, int],
    withdrawn: frozenset[str],
) -> tuple[Standing, ...]:
    """Rank every entrant of ``lot`` (the field) by the order above."""
    lot_position = {entrant: index for index, entrant in enumerate(lot)}
    knockout = options.format is Format.KNOCKOUT
    points_sign = 1 if options.variant.lower_points_win else -1
    buchholz = {entrant: opponents_score(records, entrant) for entrant in lot}

    def key(entrant: str) -> tuple[int, ...]:
        record = records[entrant]
        out_in = eliminated.get(entrant, 0)
        parts: list[int] = []
        if knockout:
            parts.append(-out_in if out_in else -(1 << 30))
        parts.append(-record.match_points)
        for tie_break in options.tie_breaks:
            if tie_break is TieBreak.TRICKS:
                parts.append(-record.tricks)
            elif tie_break is TieBreak.POINTS:
                parts.append(points_sign * record.points)
            elif tie_break is TieBreak.WINS:
                parts.append(-record.wins)
            else:
                parts.append(-buchholz[entrant])
        parts.append(lot_position[entrant])
        return tuple(parts)

    ranked = sorted(lot, key=key)
    return tuple(
        Standing(
            rank=rank,
            entrant_id=entrant,
            match_points=records[entrant].match_points,
            points=records[entrant].points,
            tricks=records[entrant].tricks,
            wins=records[entrant].wins,
            played=records[entrant].played,
            byes=records[entrant].byes,
            opponents=buchholz[entrant],
            eliminated_in_round=eliminated.get(entrant, 0),
            withdrawn=entrant in withdrawn,
        )
        for rank, entrant in enumerate(ranked, start=1)
    )


def match_points_for(options: TournamentOptions, winners: Sequence[int], side: int) -> int:
    """The match points ``side`` earns at a table won by ``winners``: a win alone, a shared
    win (several winners), or a loss."""
    if side not in winners:
        return options.loss_points
    return options.win_points if len(winners) == 1 else options.shared_win_points
