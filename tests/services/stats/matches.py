"""Matches of every variant for the stats tests: people and bots, takeovers, timeouts.

Played through the registered (seat-controlled) games with the engine's bots, so the logs
are what the game service would store: a person's seat is sometimes taken over by a bot
(seat-control events) and sometimes handed back, and some moves are automatic (a turn that
ran out). Everything is seeded: the same arguments give the same logs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2
from engine.core.control import seat_control_command
from engine.core.payload import put
from engine.core.protocol import Game
from engine.core.rng import DeterministicRandom
from engine.registry import GAMES
from services.platform.bus import Published
from services.stats.projector import Delivery

HOKM = GAMES[common_pb2.GAME_TYPE_HOKM]
HAND = GAMES[common_pb2.GAME_TYPE_HAND]
PEOPLE = ("ana", "babak", "cyrus", "dara", "elham", "farid")
BOT_LEVELS = ("random", "greedy")


def variants() -> list[tuple[Game, object]]:
    """The rules of every variant, short matches (every variant of both games)."""
    return [
        (HOKM, hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, target_score=2)),
        (HOKM, hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS,
                                  target_score=2)),
        (HOKM, hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=2)),
        (HAND, hand_pb2.HandRules(players=2, rounds=1)),
        (HAND, hand_pb2.HandRules(players=3, rounds=1)),
        (HAND, hand_pb2.HandRules(players=4, rounds=1)),
        (HAND, hand_pb2.HandRules(players=4, partnerships=True, rounds=1)),
    ]


@dataclass
class Match:
    game_id: str
    game: Game
    events: list[log_pb2.Event]


def delivered(match: Match) -> list[Delivery]:
    """The match's events as the feed delivers them, in order."""
    return [Delivery(Published(match.game.NAME, match.game_id, log_pb2.LogEntry(event=event)))
            for event in match.events]


def play(game: Game, rules: object, index: int, *, takeovers: bool = True,
         start_ms: int = 1_764_547_200_000,
         seated: list[common_pb2.Player] | None = None) -> Match:
    """One seeded match: seats drawn among :data:`PEOPLE` and bots of :data:`BOT_LEVELS`
    (or the players ``seated``)."""
    draw = random.Random(f"stats/{game.NAME}/{index}")
    seats = game.seat_count(rules)
    people = draw.sample(PEOPLE, seats)
    players = []
    seat: int | None  # a seat, then whose turn it is (None once the match is over)
    for seat in range(seats):
        if draw.random() < 0.35:
            level = draw.choice(BOT_LEVELS)
            players.append(common_pb2.Player(player_id=f"bot:{level}:{seat}",
                                             display_name=level, is_bot=True))
        else:
            players.append(common_pb2.Player(player_id=people[seat], display_name=people[seat]))
    if seated is not None:
        players = list(seated)
    policies = game.bot_policies(None)  # type: ignore[arg-type]
    levels = [draw.choice(BOT_LEVELS) for _ in range(seats)]
    at_ms = start_ms + index * 3_600_000 * 7  # spread over weeks and months
    seed = draw.randbytes(32)
    events = game.start(rules, seed, players, at_ms=at_ms)
    state = game.replay(events)
    rngs = [DeterministicRandom(seed, f"bot/{seat}") for seat in range(seats)]
    step = 0
    while True:
        seat = game.to_act(state)
        if seat is None:
            return Match(f"g{game.NAME[:2]}{index:05d}", game, events)
        step += 1
        now = at_ms + step * 1000
        commands = []
        if takeovers and not players[seat].is_bot and draw.random() < 0.03:
            commands.append(seat_control_command(
                seat, bot=draw.random() < 0.6, bot_level=draw.choice(BOT_LEVELS),
                reason=1, requested_by="service:presence", at_ms=now))
        for command in commands:
            for event in game.decide(state, command):
                state = game.evolve(state, event)
                events.append(event)
        payload = policies[levels[seat]](game.view(state, seat), rngs[seat])
        command = log_pb2.Command(seat=seat, at_ms=now,
                                  automatic=draw.random() < 0.05)
        put(command, game.SCHEMA, payload)
        for event in game.decide(state, command):
            state = game.evolve(state, event)
            events.append(event)


def corpus(per_variant: int, *, first_index: int = 0) -> list[Match]:
    """``per_variant`` matches of every variant."""
    return [play(game, rules, first_index + n * 10 + v)
            for v, (game, rules) in enumerate(variants()) for n in range(per_variant)]
