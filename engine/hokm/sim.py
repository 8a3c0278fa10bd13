"""Whole Hokm matches played by bots (for ``dast sim hokm``, golden logs and benchmarks)."""

from __future__ import annotations

from collections.abc import Sequence

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.testing import play_match as play_game
from engine.hokm.bots import BOTS, Policy


def default_players(seats: int) -> list[common_pb2.Player]:
    """Bot players named ``bot-0`` … for a table of ``seats``."""
    return [
        common_pb2.Player(player_id=f"bot-{seat}", display_name=f"Bot {seat}", is_bot=True)
        for seat in range(seats)
    ]


def play_match(
    rules: hokm_pb2.HokmRules,
    seed: bytes,
    policies: Sequence[str | Policy],
    rng_seed: int | bytes,
    *,
    players: Sequence[common_pb2.Player] | None = None,
    at_ms: int = 0,
    step_ms: int = 1000,
) -> list[log_pb2.Event]:
    """Play a whole match, seat ``s`` following ``policies[s]`` (a :data:`BOTS` name or a
    policy); the full, unredacted log.

    :raises KeyError: for an unknown bot name.
    :raises RuleViolation: for bad rules or players (as :func:`engine.hokm.start`).
    """
    chosen = [BOTS[p] if isinstance(p, str) else p for p in policies]
    if players is None:
        players = default_players(len(chosen))
    return play_game(
        hokm, rules, seed, players, chosen, rng_seed, at_ms=at_ms, step_ms=step_ms
    )
