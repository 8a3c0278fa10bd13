"""Check :class:`~engine.tournament.model.TournamentOptions` and resolve their defaults.

:func:`resolve_options` is called by :func:`engine.tournament.create`; the resolved options
are what the first event records, so a log never depends on today's defaults. Every refusal
is an ``InvalidCommand`` with :attr:`TournamentCode.INVALID_OPTIONS`.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from engine.core.errors import InvalidCommand
from engine.tournament.errors import TournamentCode
from engine.tournament.model import (
    MAX_ENTRANTS,
    MAX_ROUND_ROBIN_ENTRANTS,
    MAX_ROUNDS,
    Entry,
    Format,
    TieBreak,
    TournamentOptions,
    VariantSpec,
)

MAX_MATCH_POINTS: Final = 1000
"""The most match points any result may award (keeps totals small and sane)."""
MAX_ROUND_SECONDS: Final = 7 * 24 * 3600
MAX_SEATS: Final = 8


def default_tie_breaks(variant: VariantSpec) -> tuple[TieBreak, ...]:
    """The tie-breaks after match points when the options name none: tricks first where
    the game counts them, then points, then opponents' strength."""
    if variant.has_tricks:
        return (TieBreak.TRICKS, TieBreak.POINTS, TieBreak.OPPONENTS)
    return (TieBreak.POINTS, TieBreak.WINS, TieBreak.OPPONENTS)


def _refuse(message: str) -> InvalidCommand:
    return InvalidCommand(TournamentCode.INVALID_OPTIONS, message)


def check_variant(variant: VariantSpec) -> None:
    """Refuse a variant whose sides do not split its seats into equal teams.

    :raises InvalidCommand: when they do not.
    """
    if not isinstance(variant, VariantSpec):
        raise _refuse("the variant must be a VariantSpec")
    if not variant.game or not isinstance(variant.game, str):
        raise _refuse("the variant names no game")
    if (
        not isinstance(variant.seats, int)
        or not isinstance(variant.sides, tuple)
        or not all(isinstance(side, tuple) for side in variant.sides)
        or not all(
            isinstance(seat, int) and not isinstance(seat, bool)
            for side in variant.sides
            for seat in side
        )
        or not isinstance(variant.lower_points_win, bool)
        or not isinstance(variant.has_tricks, bool)
    ):
        raise _refuse("the variant's fields have the wrong types")
    if not 2 <= variant.seats <= MAX_SEATS:
        raise _refuse(f"a table has 2..{MAX_SEATS} seats, not {variant.seats}")
    if len(variant.sides) < 2:
        raise _refuse("a table needs at least two sides")
    sizes = {len(side) for side in variant.sides}
    if len(sizes) != 1 or 0 in sizes:
        raise _refuse("every side must have the same, non-zero number of seats")
    seats = sorted(seat for side in variant.sides for seat in side)
    if seats != list(range(variant.seats)):
        raise _refuse("the sides must cover every seat exactly once")


def resolve_options(options: TournamentOptions) -> TournamentOptions:
    """``options`` checked, with every default resolved (``rounds`` stays 0 for Swiss,
    resolved at the start once the field is known).

    :raises InvalidCommand: for options out of range or that do not fit together.
    """
    if not isinstance(options, TournamentOptions):
        raise _refuse("options must be TournamentOptions")
    check_variant(options.variant)
    try:
        format_ = Format(options.format)
        entry = Entry(options.entry)
        tie_breaks = tuple(TieBreak(tb) for tb in options.tie_breaks)
    except ValueError as error:
        raise _refuse(str(error)) from None
    numbers = (
        "rounds", "win_points", "shared_win_points", "loss_points", "bye_points",
        "round_seconds", "registration_closes_at_ms", "max_entrants", "table_target_score",
        "table_turn_seconds",
    )
    for name in numbers:
        value = getattr(options, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _refuse(f"{name} must be an int")
    if not isinstance(options.fill_with_bots, bool) or not isinstance(options.tie_breaks, tuple):
        raise _refuse("fill_with_bots must be a bool and tie_breaks a tuple")
    if len(set(tie_breaks)) != len(tie_breaks):
        raise _refuse("a tie-break is named twice")
    if not 0 <= options.rounds <= MAX_ROUNDS:
        raise _refuse(f"rounds must be 0..{MAX_ROUNDS}")
    points = (options.win_points, options.shared_win_points, options.loss_points)
    if any(not 0 <= value <= MAX_MATCH_POINTS for value in points):
        raise _refuse(f"match points must be 0..{MAX_MATCH_POINTS}")
    if not options.win_points >= options.shared_win_points >= options.loss_points:
        raise _refuse("a win must be worth at least a shared win, a shared win a loss")
    bye_points = options.win_points if options.bye_points == -1 else options.bye_points
    if not 0 <= bye_points <= MAX_MATCH_POINTS:
        raise _refuse(f"bye points must be -1 (a win) or 0..{MAX_MATCH_POINTS}")
    if not 0 <= options.round_seconds <= MAX_ROUND_SECONDS:
        raise _refuse(f"round_seconds must be 0..{MAX_ROUND_SECONDS}")
    if options.registration_closes_at_ms < 0:
        raise _refuse("registration_closes_at_ms must not be negative")
    if not 0 <= options.max_entrants <= MAX_ENTRANTS:
        raise _refuse(f"max_entrants must be 0..{MAX_ENTRANTS}")
    largest = MAX_ROUND_ROBIN_ENTRANTS if format_ is Format.ROUND_ROBIN else MAX_ENTRANTS
    if options.max_entrants > largest:
        raise _refuse(f"a {format_.value} tournament takes at most {largest} entrants")
    if options.table_target_score < 0 or options.table_turn_seconds < 0:
        raise _refuse("table options must not be negative")
    return dataclasses.replace(
        options,
        format=format_,
        entry=entry,
        tie_breaks=tie_breaks or default_tie_breaks(options.variant),
        bye_points=bye_points,
        max_entrants=options.max_entrants or largest,
    )


def entrants_per_table(options: TournamentOptions) -> int:
    """How many entrants one table seats: one per side for pairs, one per seat for
    individuals."""
    variant = options.variant
    return variant.side_count if options.entry is Entry.PAIRS else variant.seats


def members_per_entrant(options: TournamentOptions) -> int:
    """Players per entrant: a side's seats for pairs, one for individuals."""
    return options.variant.side_size if options.entry is Entry.PAIRS else 1
