"""Whole Hand matches played by bots (for ``dast sim hand``, golden logs and
benchmarks): :func:`engine.core.testing.play_bots` with this game's :data:`BOTS`."""

from __future__ import annotations

from collections.abc import Sequence

from dast.v1 import common_pb2, hand_pb2, log_pb2
from engine import hand
from engine.core.testing import bot_players, play_bots
from engine.hand.bots import BOTS, Policy

default_players = bot_players


def play_match(
    rules: hand_pb2.HandRules,
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
    :raises RuleViolation: for bad rules or players (as :func:`engine.hand.start`).
    """
    return play_bots(
        hand, BOTS, rules, seed, policies, rng_seed, players=players, at_ms=at_ms,
        step_ms=step_ms,
    )
