"""The options of a Hokm match, resolved from :class:`~dast.v1.hokm_pb2.HokmRules`.

Every option of ``docs/rules/hokm.md`` is a field of ``HokmRules``; unset fields take the
defaults of that file. :func:`resolve_rules` turns a (possibly partial) proto into a
:class:`HokmOptions` record of plain ints, and :func:`rules_proto` turns it back into a
fully-set proto, which the ``HokmMatchStarted`` event records so that a log never depends
on today's defaults.

>>> options = resolve_rules(hokm_pb2.HokmRules())
>>> options.seats, options.target_score, options.tricks_needed, options.turn_seconds
(4, 7, 7, 30)
>>> resolve_rules(rules_proto(options)) == options
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dast.v1 import hokm_pb2
from engine.core.errors import Code, InvalidCommand

VARIANT_SEATS: Final[dict[int, int]] = {
    hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS: 4,
    hokm_pb2.HOKM_VARIANT_THREE_PLAYERS: 3,
    hokm_pb2.HOKM_VARIANT_TWO_PLAYERS: 2,
}
"""Seats per variant (docs/rules/hokm.md "Four players", "Three players", "Two players")."""
HAND_SIZE: Final[dict[int, int]] = {4: 13, 3: 16, 2: 13}
"""Cards each seat holds once the deal is complete, by number of seats."""
TOTAL_TRICKS: Final[dict[int, int]] = {4: 13, 3: 16, 2: 26}
"""Tricks in a round played to the end, by number of seats."""
FIRST_PACKET: Final = 5
"""The hakem declares trump seeing only this many cards (docs/rules/hokm.md "Dealing and trump")."""
PACKET: Final = 4
"""The rest is dealt in packets of this many (``000``: "4 at a time")."""
SET_ASIDE_COUNT: Final = 4
"""Three players: the hakem lays this many cards aside after taking the kitty."""
MAX_TARGET_SCORE: Final = 1000
MAX_TURN_SECONDS: Final = 3600


@dataclass(frozen=True, slots=True)
class HokmOptions:
    """The resolved options of a match; enum fields hold the proto enum values."""

    variant: int
    hakem_selection: int
    play_all_tricks: bool
    points_win: int
    points_kot: int
    points_hakem_kot: int
    shelem_points: int
    hakem_rotation: int
    target_score: int
    random_partners: bool
    tricks_to_win_3p: int
    points_hakem_win_3p: int
    points_defenders_win_3p: int
    points_hakem_kot_3p: int
    tricks_to_win_2p: int
    trump_2p: int
    turn_seconds: int

    @property
    def seats(self) -> int:
        """Number of seats: 4, 3 or 2."""
        return VARIANT_SEATS[self.variant]

    @property
    def hand_size(self) -> int:
        """Cards per seat once dealt (13, 16 or 13)."""
        return HAND_SIZE[self.seats]

    @property
    def total_tricks(self) -> int:
        """Tricks in a round played to the end (13, 16 or 26)."""
        return TOTAL_TRICKS[self.seats]

    @property
    def tricks_needed(self) -> int:
        """Tricks a side needs to win the round (7, ``tricks_to_win_3p``, ``tricks_to_win_2p``)."""
        seats = self.seats
        if seats == 4:
            return 7
        return self.tricks_to_win_3p if seats == 3 else self.tricks_to_win_2p

    @property
    def hakem_declares(self) -> bool:
        """Whether the hakem declares trump from 5 cards (all but two players' ``pile_card``)."""
        return self.seats != 2 or self.trump_2p == hokm_pb2.TRUMP_2P_HAKEM_DECLARES


def _pick(value: int, default: int) -> int:
    return default if value == 0 else value


def resolve_rules(rules: hokm_pb2.HokmRules) -> HokmOptions:
    """Resolve a rules proto into options, filling unset fields with the defaults.

    :raises InvalidCommand: (``invalid_rules``) for an unknown enum value or an option out
        of range (a target score of 0, a trick majority larger than the round).
    """
    if not isinstance(rules, hokm_pb2.HokmRules):
        raise InvalidCommand(Code.INVALID_RULES, f"Hokm needs HokmRules, got {type(rules)!r}")
    options = HokmOptions(
        variant=_pick(rules.variant, hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS),
        hakem_selection=_pick(rules.hakem_selection, hokm_pb2.HAKEM_SELECTION_FIRST_ACE),
        play_all_tricks=rules.play_all_tricks if rules.HasField("play_all_tricks") else False,
        points_win=rules.points_win if rules.HasField("points_win") else 1,
        points_kot=rules.points_kot if rules.HasField("points_kot") else 2,
        points_hakem_kot=rules.points_hakem_kot if rules.HasField("points_hakem_kot") else 3,
        shelem_points=rules.shelem_points if rules.HasField("shelem_points") else 3,
        hakem_rotation=_pick(rules.hakem_rotation, hokm_pb2.HAKEM_ROTATION_KEEP_IF_WON),
        target_score=rules.target_score if rules.HasField("target_score") else 7,
        random_partners=rules.random_partners if rules.HasField("random_partners") else False,
        tricks_to_win_3p=rules.tricks_to_win_3p if rules.HasField("tricks_to_win_3p") else 9,
        points_hakem_win_3p=(
            rules.points_hakem_win_3p if rules.HasField("points_hakem_win_3p") else 2
        ),
        points_defenders_win_3p=(
            rules.points_defenders_win_3p if rules.HasField("points_defenders_win_3p") else 1
        ),
        points_hakem_kot_3p=(
            rules.points_hakem_kot_3p if rules.HasField("points_hakem_kot_3p") else 3
        ),
        tricks_to_win_2p=rules.tricks_to_win_2p if rules.HasField("tricks_to_win_2p") else 14,
        trump_2p=_pick(rules.trump_2p, hokm_pb2.TRUMP_2P_PILE_CARD),
        turn_seconds=rules.turn_seconds if rules.HasField("turn_seconds") else 30,
    )
    _check(options)
    return options


def _check(options: HokmOptions) -> None:
    def bad(message: str) -> InvalidCommand:
        return InvalidCommand(Code.INVALID_RULES, message)

    if options.variant not in VARIANT_SEATS:
        raise bad(f"unknown variant {options.variant}")
    if options.hakem_selection not in hokm_pb2.HakemSelection.values():
        raise bad(f"unknown hakem_selection {options.hakem_selection}")
    if options.hakem_rotation not in hokm_pb2.HakemRotation.values():
        raise bad(f"unknown hakem_rotation {options.hakem_rotation}")
    if options.trump_2p not in hokm_pb2.Trump2p.values():
        raise bad(f"unknown trump_2p {options.trump_2p}")
    if not 1 <= options.target_score <= MAX_TARGET_SCORE:
        raise bad(f"target_score must be 1..{MAX_TARGET_SCORE}, got {options.target_score}")
    if options.turn_seconds > MAX_TURN_SECONDS:
        raise bad(f"turn_seconds must be at most {MAX_TURN_SECONDS}, got {options.turn_seconds}")
    for name, value, total in (
        ("tricks_to_win_3p", options.tricks_to_win_3p, TOTAL_TRICKS[3]),
        ("tricks_to_win_2p", options.tricks_to_win_2p, TOTAL_TRICKS[2]),
    ):
        # More than half, so that two sides can never both reach it.
        if not total // 2 < value <= total:
            raise bad(f"{name} must be {total // 2 + 1}..{total}, got {value}")


def rules_proto(options: HokmOptions) -> hokm_pb2.HokmRules:
    """The fully-set proto of resolved options (what ``HokmMatchStarted.rules`` records)."""
    return hokm_pb2.HokmRules(
        variant=options.variant,  # type: ignore[arg-type]
        hakem_selection=options.hakem_selection,  # type: ignore[arg-type]
        play_all_tricks=options.play_all_tricks,
        points_win=options.points_win,
        points_kot=options.points_kot,
        points_hakem_kot=options.points_hakem_kot,
        shelem_points=options.shelem_points,
        hakem_rotation=options.hakem_rotation,  # type: ignore[arg-type]
        target_score=options.target_score,
        random_partners=options.random_partners,
        tricks_to_win_3p=options.tricks_to_win_3p,
        points_hakem_win_3p=options.points_hakem_win_3p,
        points_defenders_win_3p=options.points_defenders_win_3p,
        points_hakem_kot_3p=options.points_hakem_kot_3p,
        tricks_to_win_2p=options.tricks_to_win_2p,
        trump_2p=options.trump_2p,  # type: ignore[arg-type]
        turn_seconds=options.turn_seconds,
    )
