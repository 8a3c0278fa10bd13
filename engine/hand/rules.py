"""Hand's rules options (docs/rules/hand.md): resolving a :class:`~dast.v1.hand_pb2.HandRules`.

Every option of the rules file is a field of ``HandRules`` whose unset value means the
default shown there. :func:`resolve_rules` fills in every default, so the match-start
event records the complete options and a log never depends on today's defaults;
:class:`Options` is the same record as plain ints for the engine's hot paths.

>>> options = options_of(resolve_rules(hand_pb2.HandRules(), 2))
>>> options.players, options.open_min, options.joker_penalty, options.rounds
(2, 51, 15, 5)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from dast.v1 import hand_pb2
from engine.core.errors import Code, RuleViolation

DEFAULT_ACE_LOW_VALUE: Final = 1
DEFAULT_JOKER_PENALTY: Final = 15
DEFAULT_OPEN_MIN: Final = 51
DEFAULT_MAX_JOKERS_PER_MELD: Final = 1
DEFAULT_MAX_RESTOCKS: Final = 2
DEFAULT_ROUNDS: Final = 5
MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 4


class DealerRotation(IntEnum):
    """Who deals the next round (docs/rules/hand.md "Players, seats and the deal")."""

    LOSER_DEALS = hand_pb2.HAND_DEALER_ROTATION_LOSER_DEALS
    NEXT = hand_pb2.HAND_DEALER_ROTATION_NEXT


@dataclass(frozen=True, slots=True)
class Options:
    """The resolved rules options (every field named as in docs/rules/hand.md)."""

    players: int
    partnerships: bool
    ace_low_value: int
    joker_penalty: int
    dealer_rotation: DealerRotation
    open_min: int
    must_beat_previous: bool
    max_jokers_per_meld: int
    hand_waives_open_min: bool
    max_restocks: int
    partner_of_winner_scores: bool
    rounds: int
    turn_seconds: int


def resolve_rules(rules: hand_pb2.HandRules, seated: int) -> hand_pb2.HandRules:
    """The rules with every default filled in, for a match of ``seated`` players.

    :raises RuleViolation: ``invalid_players`` when the seat count is not 2, 3 or 4 (or
        differs from ``rules.players``); ``invalid_rules`` for an option out of range.
    """
    players = rules.players if rules.HasField("players") else seated
    if players != seated or not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise RuleViolation(
            Code.INVALID_PLAYERS,
            f"Hand is played by 2, 3 or 4 players; got {seated} seated for {players}",
        )
    partnerships = rules.partnerships if rules.HasField("partnerships") else False
    if partnerships and players != MAX_PLAYERS:
        raise RuleViolation(Code.INVALID_RULES, "partnerships need exactly 4 players")
    max_jokers = (
        rules.max_jokers_per_meld
        if rules.HasField("max_jokers_per_meld")
        else DEFAULT_MAX_JOKERS_PER_MELD
    )
    if max_jokers < 1:
        raise RuleViolation(Code.INVALID_RULES, "max_jokers_per_meld must be at least 1")
    rounds = rules.rounds if rules.HasField("rounds") else DEFAULT_ROUNDS
    if rounds < 1:
        raise RuleViolation(Code.INVALID_RULES, "a match has at least one round")
    rotation = rules.dealer_rotation or hand_pb2.HAND_DEALER_ROTATION_LOSER_DEALS
    if int(rotation) not in {int(r) for r in DealerRotation}:
        raise RuleViolation(Code.INVALID_RULES, f"unknown dealer_rotation {rotation}")
    return hand_pb2.HandRules(
        players=players,
        partnerships=partnerships,
        ace_low_value=_or(rules, "ace_low_value", DEFAULT_ACE_LOW_VALUE),
        joker_penalty=_or(rules, "joker_penalty", DEFAULT_JOKER_PENALTY),
        dealer_rotation=rotation,
        open_min=_or(rules, "open_min", DEFAULT_OPEN_MIN),
        must_beat_previous=rules.must_beat_previous,
        max_jokers_per_meld=max_jokers,
        hand_waives_open_min=(
            rules.hand_waives_open_min if rules.HasField("hand_waives_open_min") else True
        ),
        max_restocks=_or(rules, "max_restocks", DEFAULT_MAX_RESTOCKS),
        partner_of_winner_scores=rules.partner_of_winner_scores,
        rounds=rounds,
        turn_seconds=rules.turn_seconds,
    )


def _or(rules: hand_pb2.HandRules, name: str, default: int) -> int:
    value: int = getattr(rules, name)
    return value if rules.HasField(name) else default  # type: ignore[arg-type]


def options_of(resolved: hand_pb2.HandRules) -> Options:
    """The engine's record of rules already passed through :func:`resolve_rules`."""
    return Options(
        players=resolved.players,
        partnerships=resolved.partnerships,
        ace_low_value=resolved.ace_low_value,
        joker_penalty=resolved.joker_penalty,
        dealer_rotation=DealerRotation(resolved.dealer_rotation),
        open_min=resolved.open_min,
        must_beat_previous=resolved.must_beat_previous,
        max_jokers_per_meld=resolved.max_jokers_per_meld,
        hand_waives_open_min=resolved.hand_waives_open_min,
        max_restocks=resolved.max_restocks,
        partner_of_winner_scores=resolved.partner_of_winner_scores,
        rounds=resolved.rounds,
        turn_seconds=resolved.turn_seconds,
    )
