"""The :class:`~engine.tournament.model.VariantSpec` of the games the project serves, and the
rules of the matches its tables play.

The specs are data, not code paths: the engine reads only the spec's numbers (seats, sides,
whether points count down, whether tricks count). A new game needs a spec, and, when its
rules message says how players team up, a line in :data:`_TEAM_RULES`.

:func:`table_rules` is the one place that knows which rules field gives a game's team form
(Hand's ``partnerships``), so that the services build a table's match from the spec alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from google.protobuf.message import Message

from engine.core.protocol import Game
from engine.tournament.model import VariantSpec

_PARTNERS_OPPOSITE = ((0, 2), (1, 3))
"""Four seats in two partnerships sitting opposite each other (Hokm; Hand with
partnerships)."""


def _singles(seats: int) -> tuple[tuple[int, ...], ...]:
    return tuple((seat,) for seat in range(seats))


def hokm_spec(seats: int = 4) -> VariantSpec:
    """Hokm with 4 (two partnerships), 3 or 2 players; points are the match score, tricks
    count.

    :raises ValueError: for another number of seats.
    """
    if seats not in (2, 3, 4):
        raise ValueError(f"Hokm is played by 2, 3 or 4 players, not {seats}")
    sides = _PARTNERS_OPPOSITE if seats == 4 else _singles(seats)
    return VariantSpec(game="hokm", seats=seats, sides=sides)


def hand_spec(seats: int = 4, *, partnerships: bool = False) -> VariantSpec:
    """Hand with 2–4 players, each for themselves or (4 players) in two partnerships;
    points are penalties (the lowest total wins), tricks do not exist.

    :raises ValueError: for another number of seats, or partnerships without 4 players.
    """
    if seats not in (2, 3, 4):
        raise ValueError(f"Hand is played by 2, 3 or 4 players, not {seats}")
    if partnerships and seats != 4:
        raise ValueError("Hand partnerships need 4 players")
    sides = _PARTNERS_OPPOSITE if partnerships else _singles(seats)
    return VariantSpec(
        game="hand", seats=seats, sides=sides, lower_points_win=True, has_tricks=False
    )


def _hokm_team_rules(rules: Any, spec: VariantSpec) -> Any:
    # The variant (from the seat count) fixes the teams: four players are always partners.
    del spec
    return rules


def _hand_team_rules(rules: Any, spec: VariantSpec) -> Any:
    if spec.sides == _PARTNERS_OPPOSITE:
        rules.partnerships = True  # unset otherwise: the rules' default, each for themselves
    return rules


_TEAM_RULES: Final[dict[str, Callable[[Any, VariantSpec], Any]]] = {
    "hokm": _hokm_team_rules,
    "hand": _hand_team_rules,
}
"""Per game, how its default rules for the seats become the rules whose teams are the spec's
sides (the rules message is the game's own, changed in place and returned)."""


def table_rules(game: Game, spec: VariantSpec, *, target_score: int, turn_seconds: int
                ) -> Message:
    """The rules message of a match at a table of ``spec``: ``game``'s default rules for the
    spec's seats, in the team form of the spec's sides, with the table settings applied by
    the game's own ``table_rules`` (0: the game's default score, untimed).

    :raises ValueError: when ``spec`` is not ``game``'s, or the game has no tournament rules
        here.
    """
    if spec.game != game.NAME:
        raise ValueError(f"a {spec.game} spec does not describe {game.NAME}")
    team_rules = _TEAM_RULES.get(spec.game)
    if team_rules is None:
        raise ValueError(f"{game.NAME} has no tournament rules")
    rules = team_rules(game.rules_for_players(spec.seats), spec)
    return game.table_rules(rules, target_score=target_score, turn_seconds=turn_seconds)
