"""What the services need to host Hokm (:mod:`engine.core.protocol`, the service surface).

Seats and variants (docs/rules/hokm.md "Four players", "Three players", "Two players"), how a
table's settings become :class:`~dast.v1.hokm_pb2.HokmRules`, the bots by level and what a
view says about its seat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from dast.v1 import hokm_pb2
from engine.core.budget import Budget
from engine.core.errors import Code, RuleViolation
from engine.core.protocol import Policy, Schema, ViewSummary
from engine.core.summary import summary_of
from engine.hokm.rules import resolve_rules

SCHEMA: Final = Schema(
    field="hokm", rules=hokm_pb2.HokmRules, command=hokm_pb2.HokmCommand,
    event=hokm_pb2.HokmEvent, view=hokm_pb2.HokmView,
)
PLAYER_COUNTS: Final[tuple[int, ...]] = (4, 3, 2)
"""Seats at a Hokm table, the default first."""
TURN_STEPS: Final = 1
"""Every Hokm decision (trump, a card, the set-aside) is a turn of its own."""
_VARIANT_OF_SEATS: Final = {
    4: hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS,
    3: hokm_pb2.HOKM_VARIANT_THREE_PLAYERS,
    2: hokm_pb2.HOKM_VARIANT_TWO_PLAYERS,
}


def seat_count(rules: hokm_pb2.HokmRules) -> int:
    """The seats of ``rules``' variant (unset: four).

    :raises InvalidCommand: ``invalid_rules`` for an unknown variant or an option out of range.
    """
    return resolve_rules(rules).seats


def rules_for_players(players: int) -> hokm_pb2.HokmRules:
    """The default rules of the variant for ``players`` seats (0: four).

    :raises RuleViolation: ``invalid_players`` for a count other than 2, 3 or 4.
    """
    variant = _VARIANT_OF_SEATS.get(players or PLAYER_COUNTS[0])
    if variant is None:
        raise RuleViolation(Code.INVALID_PLAYERS, f"Hokm is for 2, 3 or 4 players, not {players}")
    return hokm_pb2.HokmRules(variant=variant)


def table_rules(rules: hokm_pb2.HokmRules, *, target_score: int, turn_seconds: int
                ) -> hokm_pb2.HokmRules:
    """``rules`` with the table's points to win (0: the rules' default) and seconds per turn
    (0: untimed) applied (docs/rules/hokm.md "What the app adds")."""
    match = hokm_pb2.HokmRules()
    match.CopyFrom(rules)
    if target_score:
        match.target_score = target_score
    match.turn_seconds = turn_seconds
    return match


def bot_policies(budget: Budget) -> Mapping[str, Policy]:
    """The policies by level; ``expert`` searches within ``budget`` per decision."""
    from engine.hokm import expert  # the search's tables load only when a server hosts bots
    from engine.hokm.bots import BOTS

    return {**BOTS, "expert": expert.make_expert(budget)}


def summarize(view: hokm_pb2.HokmView) -> ViewSummary:
    """What ``view`` says about its seat."""
    return summary_of(view, is_over=view.phase == hokm_pb2.HOKM_PHASE_MATCH_OVER)
