"""Bots: pure policies over a seat's :class:`~dast.v1.hand_pb2.HandView`, never the state.

A policy is ``(view, rng) -> HandCommand``; :data:`BOTS` names them:

- ``random``: a random legal command from the view, biased toward melding (a lay-down
  when one is legal, often a lay-off) so that random play opens and goes out.
- ``greedy``: take the discard when it is usable, else draw; meld whenever possible (the
  first listed lay-down: before opening that is the solver's best opening, once it reaches
  ``open_min``; once opened, the largest meld), lay off and retrieve jokers, then discard
  the highest-penalty card that fits no meld (never a joker while another card remains).
- ``basic``: :func:`engine.hand.basic_bot.basic_policy`: keeps cards close to melds, opens
  as soon as allowed, and does not feed the next player a card it can use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from dast.v1 import hand_pb2
from engine.core.rng import DeterministicRandom
from engine.hand.basic_bot import basic_policy
from engine.hand.cards import is_joker, penalty_value

Policy = Callable[[hand_pb2.HandView, DeterministicRandom], hand_pb2.HandCommand]

_MELD_BIAS_PERCENT: Final = 90
_LAY_OFF_BIAS_PERCENT: Final = 60


def _of_kind(legal: Sequence[hand_pb2.HandCommand], *kinds: str) -> list[hand_pb2.HandCommand]:
    return [command for command in legal if command.WhichOneof("kind") in kinds]


def _pick(
    commands: Sequence[hand_pb2.HandCommand], rng: DeterministicRandom
) -> hand_pb2.HandCommand:
    return commands[rng.randbelow(len(commands))]


def random_policy(view: hand_pb2.HandView, rng: DeterministicRandom) -> hand_pb2.HandCommand:
    """A random legal command, biased toward laying melds and laying off.

    :raises ValueError: if the view lists no legal command (the seat is not to act).
    """
    legal = list(view.legal)
    if not legal:
        raise ValueError("the seat has no legal command")
    melds = _of_kind(legal, "lay_melds")
    if melds and rng.randbelow(100) < _MELD_BIAS_PERCENT:
        return _pick(melds, rng)
    table = _of_kind(legal, "lay_off", "retrieve_joker")
    if table and rng.randbelow(100) < _LAY_OFF_BIAS_PERCENT:
        return _pick(table, rng)
    draws = _of_kind(legal, "draw_from_stock", "take_discard")
    if draws:
        return _pick(draws, rng)
    discards = _of_kind(legal, "discard")
    return _pick(discards or legal, rng)


def greedy_policy(view: hand_pb2.HandView, rng: DeterministicRandom) -> hand_pb2.HandCommand:
    """Meld whenever possible, then discard the costliest card that fits no meld.

    :raises ValueError: if the view lists no legal command (the seat is not to act).
    """
    legal = list(view.legal)
    if not legal:
        raise ValueError("the seat has no legal command")
    takes = _of_kind(legal, "take_discard")
    if takes:
        return takes[0]
    draws = _of_kind(legal, "draw_from_stock")
    if draws:
        return draws[0]
    melds = _of_kind(legal, "lay_melds")
    if melds:
        return max(melds, key=lambda c: sum(len(m.cards) for m in c.lay_melds.melds))
    table = _of_kind(legal, "lay_off", "retrieve_joker")
    if table:
        return table[0]
    discards = _of_kind(legal, "discard")
    if not discards:
        return legal[0]
    in_melds = {card for spec in view.meld_options for card in spec.cards}
    penalty = view.rules.joker_penalty

    def cost(command: hand_pb2.HandCommand) -> tuple[bool, bool, int, int]:
        card = command.discard.card
        # Keep jokers, then cards that fit a meld; among the rest, shed the most penalty.
        return (
            not is_joker(card),
            card not in in_melds,
            penalty_value(card, joker_penalty=penalty),
            -card,
        )

    return max(discards, key=cost)


BOTS: Final[dict[str, Policy]] = {
    "random": random_policy, "greedy": greedy_policy, "basic": basic_policy,
}
"""The bots by name (``dast sim hand --bot NAME``)."""
