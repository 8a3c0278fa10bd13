"""Choosing a seat's command from its view: the engine's bot policies, by game and level.

The bot service and the turn timer both act through :func:`play_turn`: fetch the seat's
view from the game service (GetView with the seat, service token), ask the level's policy
(a pure function of that view and a seeded generator), submit the command for the seat.
Nothing here reads the full state: the view is the policy's only input.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from dast.v1 import game_pb2, hand_pb2, hokm_pb2
from engine.core.rng import DeterministicRandom
from engine.hand.bots import BOTS as HAND_BOTS
from engine.hokm.bots import BOTS as HOKM_BOTS

Policy = Callable[[Any, DeterministicRandom], Any]
DEFAULT_LEVEL: Final = "basic"

POLICIES: Final[dict[str, dict[str, Policy]]] = {
    "hokm": dict(HOKM_BOTS),
    "hand": dict(HAND_BOTS),
}
"""The policies of each game by level name (``random``, ``greedy``, ``basic``)."""


def bot_level(player_id: str) -> str:
    """The level of a bot player id ``bot:<level>:<seat>`` (unknown ones play ``basic``)."""
    _, _, rest = player_id.partition("bot:")
    level = rest.partition(":")[0]
    return level if level in POLICIES["hokm"] else DEFAULT_LEVEL


def policy_for(game: str, level: str) -> Policy:
    """The policy of ``level`` for ``game`` (``hokm`` or ``hand``); unknown levels: basic.

    :raises KeyError: for an unknown game.
    """
    policies = POLICIES[game]
    return policies.get(level, policies[DEFAULT_LEVEL])


def rng_for(game_id: str, seq: int, seat: int) -> DeterministicRandom:
    """The generator of a bot's decision at ``seq``: the same position decides the same."""
    key = hashlib.sha256(f"dast-bot:{game_id}".encode()).digest()
    return DeterministicRandom(key, f"bot/{seq}/{seat}")


class Outcome(StrEnum):
    """What :func:`play_turn` did."""

    PLAYED = "played"
    STALE = "stale"  # the game moved on before the command: nothing appended
    DUPLICATE = "duplicate"  # the same command id was applied before: nothing appended
    NOT_TO_ACT = "not_to_act"


@dataclass(frozen=True)
class SeatView:
    """One seat's view as GetView returned it."""

    game: str
    """``hokm`` or ``hand``."""
    seq: int
    view: hokm_pb2.HokmView | hand_pb2.HandView

    @classmethod
    def of(cls, reply: game_pb2.GetViewResponse) -> SeatView:
        """Unpack a GetView reply.

        :raises ValueError: if the reply carries no view.
        """
        game = reply.WhichOneof("view")
        if game is None:
            raise ValueError("GetView returned no view")
        return cls(game, reply.seq, getattr(reply, game))

    @property
    def is_over(self) -> bool:
        """The match is over."""
        if self.game == "hokm":
            return self.view.phase == hokm_pb2.HOKM_PHASE_MATCH_OVER
        return self.view.phase == hand_pb2.HAND_PHASE_MATCH_OVER

    @property
    def turn(self) -> int | None:
        """The seat to act, if any."""
        return self.view.turn if self.view.has_turn else None


def decide(seat_view: SeatView, level: str, game_id: str) -> Any:
    """The command ``level``'s policy chooses from ``seat_view`` alone.

    :raises ValueError: if the view offers the seat nothing to do.
    """
    policy = policy_for(seat_view.game, level)
    return policy(seat_view.view, rng_for(game_id, seat_view.seq, seat_view.view.seat))
