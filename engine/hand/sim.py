"""Whole Hand matches played by bots (for ``dast sim hand``, golden logs and benchmarks).

The match loop is the generic :func:`engine.core.testing.play_match`; this module only
names the bots and the default players.
"""

from __future__ import annotations

from collections.abc import Sequence

from dast.v1 import common_pb2, hand_pb2, log_pb2
from engine import hand
from engine.core.testing import play_match as play_game
from engine.hand.bots import BOTS, Policy


def default_players(seats: int) -> list[common_pb2.Player]:
    """Bot players named ``bot-0`` … for a table of ``seats``."""
    return [
        common_pb2.Player(player_id=f"bot-{seat}", display_name=f"Bot {seat}", is_bot=True)
        for seat in range(seats)
    ]


def play_match(
    rules: hand_pb2.HandRules,
    seed: bytes,
    policies: Sequence[str | Policy],
    rng_seed: int | bytes,
    *,
    players: Sequence[common_pb2.Player] | None = None,
    at_ms: int = 0,
    step_ms: int = 1000,
    max_commands: int = 100_000,
) -> list[log_pb2.Event]:
    """Play a whole match, seat ``s`` following ``policies[s]`` (a :data:`BOTS` name or a
    policy); the full, unredacted log.

    :raises KeyError: for an unknown bot name.
    :raises RuleViolation: for bad rules or players (as :func:`engine.hand.start`).
    :raises RuntimeError: if the match is not over after ``max_commands`` commands.
    """
    chosen = [BOTS[p] if isinstance(p, str) else p for p in policies]
    if players is None:
        players = default_players(len(chosen))
    return play_game(
        hand,
        rules,
        seed,
        players,
        chosen,
        rng_seed,
        at_ms=at_ms,
        step_ms=step_ms,
        max_commands=max_commands,
    )
