"""Whole Hokm matches played by bots (for ``dast sim hokm``, golden logs and
benchmarks): :func:`engine.core.testing.play_bots` with this game's :data:`BOTS`."""

from __future__ import annotations

from collections.abc import Sequence

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.testing import bot_players, play_bots
from engine.hokm.bots import BOTS, Policy

default_players = bot_players


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
    return play_bots(
        hokm, BOTS, rules, seed, policies, rng_seed, players=players, at_ms=at_ms,
        step_ms=step_ms,
    )
