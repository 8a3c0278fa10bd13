"""Choosing a seat's command from its view: each game's bot policies, by level.

The bot service and the turn timer both act through :func:`play_turn`: fetch the seat's
view from the game service (GetView with the seat, service token), ask the level's policy
(a pure function of that view and a seeded generator), submit the command for the seat.
Nothing here reads the full state: the view is the policy's only input. The policies come
from the game module (``bot_policies``, :mod:`engine.core.protocol`), found through the registry, so
no game is named here.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from google.protobuf.message import Message

from dast.v1 import game_pb2, log_pb2
from engine.core.budget import DEFAULT_TIME_MS, Budget
from engine.core.payload import take
from engine.core.protocol import BOT_LEVELS, Game, Policy, ViewSummary
from engine.core.rng import DeterministicRandom
from engine.registry import GAMES_BY_NAME, game_of_message

DEFAULT_LEVEL: Final = "basic"

EXPERT_BUDGET: Final = Budget(samples=100_000, time_ms=DEFAULT_TIME_MS, clock=time.perf_counter)
"""The ``expert`` level's budget per move: the time bounds it (the engine reads no clock, so
the bot host hands it one: a monotonic one, as it measures a duration); the sample cap
never binds."""

POLICIES: Final[dict[str, dict[str, Policy]]] = {
    name: dict(game.bot_policies(EXPERT_BUDGET)) for name, game in GAMES_BY_NAME.items()
}
"""The policies of each game by game name and level (:data:`BOT_LEVELS`); a game registered
later gets its entry the first time one of its seats plays (:func:`policy_for`)."""


def bot_level(player_id: str) -> str:
    """The level of a bot player id ``bot:<level>:<seat>`` (unknown ones play ``basic``)."""
    _, _, rest = player_id.partition("bot:")
    level = rest.partition(":")[0]
    return level if level in BOT_LEVELS else DEFAULT_LEVEL


def policy_for(game: str, level: str) -> Policy:
    """The policy of ``level`` for the game named ``game``; unknown levels play ``basic``.

    :raises KeyError: for a game the registry does not serve.
    """
    policies = POLICIES.get(game)
    if policies is None:
        policies = POLICIES.setdefault(game, dict(GAMES_BY_NAME[game].bot_policies(EXPERT_BUDGET)))
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
    """One seat's view as GetView returned it, with what the game module reads from it."""

    game: str
    """The game's name (``engine.registry.GAMES_BY_NAME``)."""
    seq: int
    view: Any
    """The game's view message (its ``SCHEMA.view`` type)."""
    summary: ViewSummary
    seat_control: tuple[log_pb2.SeatControl, ...] = ()
    """Who controls each seat, from the game's log (``GetViewResponse.seat_control``)."""

    @classmethod
    def of(cls, reply: game_pb2.GetViewResponse) -> SeatView:
        """Unpack a GetView reply.

        :raises ValueError: if the reply carries no view of a game the registry serves.
        """
        game = game_of_message(reply, "view", "view")
        if game is None:
            raise ValueError("GetView returned no view of a known game")
        view = take(reply, "view", game.SCHEMA, game.SCHEMA.view)
        return cls(game.NAME, reply.seq, view, game.summarize(view), tuple(reply.seat_control))

    @classmethod
    def of_view(cls, game: Game, seq: int, view: Message) -> SeatView:
        """The seat view of ``game``'s ``view`` at ``seq``."""
        return cls(game.NAME, seq, view, game.summarize(view))

    @property
    def is_over(self) -> bool:
        """The match is over."""
        return self.summary.is_over

    @property
    def turn(self) -> int | None:
        """The seat to act, if any."""
        return self.summary.turn

    @property
    def seat(self) -> int | None:
        """The seat the view is for (None: the public view)."""
        return self.summary.seat


def decide(seat_view: SeatView, level: str, game_id: str) -> Any:
    """The command ``level``'s policy chooses from ``seat_view`` alone.

    :raises ValueError: if the view offers the seat nothing to do.
    """
    policy = policy_for(seat_view.game, level)
    seat = seat_view.seat if seat_view.seat is not None else 0
    return policy(seat_view.view, rng_for(game_id, seat_view.seq, seat))
