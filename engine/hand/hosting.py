"""What the services need to host Hand (:mod:`engine.core.protocol`, the service surface).

Seats (docs/rules/hand.md: 2, 3 or 4 players), how a table's settings become
:class:`~dast.v1.hand_pb2.HandRules`, the bots by level and what a view says about its seat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from dast.v1 import hand_pb2
from engine.core.budget import Budget
from engine.core.errors import Code, RuleViolation
from engine.core.protocol import Policy, Schema, ViewSummary
from engine.core.summary import summary_of

SCHEMA: Final = Schema(
    field="hand", rules=hand_pb2.HandRules, command=hand_pb2.HandCommand,
    event=hand_pb2.HandEvent, view=hand_pb2.HandView,
)
PLAYER_COUNTS: Final[tuple[int, ...]] = (4, 3, 2)
"""Seats at a Hand table, the default first."""
TURN_STEPS: Final = 21
"""Decisions one Hand turn may take: a draw, melds, lay-offs and joker retrievals, a discard."""


def seat_count(rules: hand_pb2.HandRules) -> int:
    """The seats ``rules`` ask for (unset: four).

    :raises RuleViolation: ``invalid_players`` for a count other than 2, 3 or 4.
    """
    players = rules.players if rules.HasField("players") else PLAYER_COUNTS[0]
    if players not in PLAYER_COUNTS:
        raise RuleViolation(Code.INVALID_PLAYERS, f"Hand is for 2 to 4 players, not {players}")
    return players


def rules_for_players(players: int) -> hand_pb2.HandRules:
    """The default rules of a match of ``players`` (0: four).

    :raises RuleViolation: ``invalid_players`` for a count other than 2, 3 or 4.
    """
    rules = hand_pb2.HandRules(players=players or PLAYER_COUNTS[0])
    seat_count(rules)
    return rules


def table_rules(rules: hand_pb2.HandRules, *, target_score: int, turn_seconds: int
                ) -> hand_pb2.HandRules:
    """``rules`` with the table's seconds per turn (0: untimed) applied; Hand is scored over
    its rounds, so the app's points-to-win setting does not apply."""
    del target_score  # Hand has no target score (docs/rules/hand.md "Scoring")
    match = hand_pb2.HandRules()
    match.CopyFrom(rules)
    match.turn_seconds = turn_seconds
    return match


def bot_policies(budget: Budget) -> Mapping[str, Policy]:
    """The policies by level; ``expert`` searches within ``budget`` per decision."""
    from engine.hand import expert  # the solver-backed search loads only for bot hosts
    from engine.hand.bots import BOTS

    return {**BOTS, "expert": expert.make_expert(budget)}


def summarize(view: hand_pb2.HandView) -> ViewSummary:
    """What ``view`` says about its seat."""
    return summary_of(view, is_over=view.phase == hand_pb2.HAND_PHASE_MATCH_OVER)
