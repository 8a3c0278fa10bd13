"""Hokm (حکم) for 4, 3 and 2 players: the game protocol of :mod:`engine.core.protocol`.

The rules contract is ``docs/rules/hokm.md``; every option is a field of
:class:`~dast.v1.hokm_pb2.HokmRules` (resolved by :mod:`engine.hokm.rules`). Modules:
``rules`` (options), ``state`` (the compact state), ``_core`` (int kernels), ``deal``
(seating, hakem selection, dealing), ``decide`` (start, decide), ``legal`` (legal, and the
set-aside's choice entry), ``evolve``
(evolve, replay), ``views`` (view, redact), ``records`` (what the audit reads back),
``bots`` (policies over a seat's view) and ``sim`` (whole matches played by bots).

>>> from dast.v1 import common_pb2
>>> from engine.hokm.sim import play_match
>>> events = play_match(hokm_pb2.HokmRules(target_score=1), bytes(32), ["greedy"] * 4, 7)
>>> is_over(replay(events))
True
"""

from __future__ import annotations

from typing import Final

from dast.v1 import common_pb2, hokm_pb2
from engine.hokm.decide import decide, is_over, start, to_act
from engine.hokm.evolve import evolve, replay
from engine.hokm.hosting import (
    PLAYER_COUNTS,
    SCHEMA,
    TURN_STEPS,
    bot_policies,
    rules_for_players,
    seat_count,
    summarize,
    table_rules,
)
from engine.hokm.legal import entry_command, entry_covers, entry_size, legal
from engine.hokm.records import command_for, revealed_seed, setup_of
from engine.hokm.state import HokmState
from engine.hokm.views import redact, view

GAME_TYPE: Final = common_pb2.GAME_TYPE_HOKM
NAME: Final = "hokm"

__all__ = [
    "GAME_TYPE",
    "NAME",
    "PLAYER_COUNTS",
    "SCHEMA",
    "TURN_STEPS",
    "HokmState",
    "bot_policies",
    "command_for",
    "decide",
    "entry_command",
    "entry_covers",
    "entry_size",
    "evolve",
    "hokm_pb2",
    "is_over",
    "legal",
    "redact",
    "replay",
    "revealed_seed",
    "rules_for_players",
    "seat_count",
    "setup_of",
    "start",
    "summarize",
    "table_rules",
    "to_act",
    "view",
]
