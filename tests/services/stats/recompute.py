"""An independent recomputation of every stats figure straight from the games' logs.

Written from the rules of the game (docs/rules) and the schema, not from the projector nor
from ``engine/<game>/stats.py``: it reads each log with its own code and rates the matches
with openskill directly, in the order the projection rated them (the only thing taken from
the projection; the order is checked to be a permutation of the finished matches).
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from openskill.models import PlackettLuce

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2

KOTS = {hokm_pb2.ROUND_RESULT_KOT, hokm_pb2.ROUND_RESULT_HAKEM_KOT, hokm_pb2.ROUND_RESULT_SHELEM}
HOKM_MOVES = {"card_played", "cards_set_aside", "pile_cards_taken"}
HAND_MOVES = {"card_drawn", "melds_laid", "card_laid_off", "joker_retrieved", "card_discarded"}
GameType: TypeAlias = common_pb2.GameType.ValueType


def who(player: common_pb2.Player) -> str:
    if not player.is_bot:
        return player.player_id
    level = player.player_id.split(":")[1]
    return f"bot:{level}"


@dataclass
class Expected:
    players: dict[tuple[str, GameType, str], dict[str, Any]] = field(default_factory=dict)
    counters: dict[tuple[str, GameType, str, str], int] = field(default_factory=dict)
    periods: dict[tuple[str, GameType, str, str], dict[str, Any]] = field(default_factory=dict)
    matches: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


@dataclass
class Finished:
    game_id: str
    game_type: GameType
    variant: str
    subjects: list[str]
    is_bot: list[bool]
    teams: list[list[int]]
    winners: set[int]
    team_order: list[int]
    abandoned: list[bool]
    at_ms: int


def read_log(game_id: str, events: list[log_pb2.Event], expected: Expected) -> Finished | None:
    first = events[0]
    if first.WhichOneof("game") == "hokm":
        hokm_started = first.hokm.match_started
        game_type = common_pb2.GAME_TYPE_HOKM
        size = {hokm_pb2.HOKM_VARIANT_THREE_PLAYERS: 3,
                hokm_pb2.HOKM_VARIANT_TWO_PLAYERS: 2}.get(hokm_started.rules.variant, 4)
        variant = f"{size}p"
        order = list(hokm_started.seating) or list(range(size))
        players = [hokm_started.players[i] for i in order]
        teams = [[0, 2], [1, 3]] if size == 4 else [[s] for s in range(size)]
    else:
        hand_started = first.hand.match_started
        game_type = common_pb2.GAME_TYPE_HAND
        size = len(hand_started.players)
        together = hand_started.rules.partnerships and size == 4
        variant = f"{size}p" + ("-partnerships" if together else "")
        players = list(hand_started.players)
        teams = [[0, 2], [1, 3]] if together else [[s] for s in range(size)]
    subjects = [who(p) for p in players]
    holder = [False] * size

    def add(seat: int, name: str, amount: int) -> None:
        if amount:
            key = (subjects[seat], game_type, variant, name)
            expected.counters[key] = expected.counters.get(key, 0) + amount

    def player(seat: int) -> dict[str, Any]:
        return expected.players.setdefault(
            (subjects[seat], game_type, variant),
            {"played": 0, "won": 0, "lost": 0, "abandoned": 0, "own_moves": 0, "bot_moves": 0,
             "rated": 0})

    for event in events:
        if event.HasField("seat_control"):
            holder[event.seat_control.seat] = event.seat_control.bot
            continue
        member = event.WhichOneof("game")
        assert member is not None  # every event but a seat control's belongs to a game
        body = getattr(event, member)
        kind = body.WhichOneof("kind")
        mover = None
        if member == "hokm" and (kind in HOKM_MOVES or (
                kind == "trump_declared" and not body.trump_declared.from_pile)):
            part = getattr(body, kind)
            mover = part.winner if kind == "pile_cards_taken" else part.seat
        if member == "hand" and kind in HAND_MOVES:
            mover = getattr(body, kind).seat
        if mover is not None:
            stand_in = not players[mover].is_bot and (holder[mover] or event.automatic)
            player(mover)["bot_moves" if stand_in else "own_moves"] += 1
        if member == "hokm" and kind == "round_ended":
            ended = body.round_ended
            for seat in range(size):
                won = seat in ended.winners
                add(seat, "rounds_played", 1)
                add(seat, "rounds_won", int(won))
                add(seat, "rounds_won_as_hakem", int(won and seat == ended.hakem))
                add(seat, "rounds_won_against_hakem",
                    int(won and ended.hakem not in ended.winners))
                if ended.result in KOTS:
                    add(seat, "kots_given" if won else "kots_taken", 1)
                add(seat, "tricks", ended.tricks[seat])
        if member == "hand" and kind == "round_ended":
            ended = body.round_ended
            team = next(t for t in teams if ended.went_out in t)
            for seat in range(size):
                add(seat, "rounds_played", 1)
                add(seat, "rounds_won", int(seat in team))
                add(seat, "hand_finishes", int(seat == ended.went_out
                                               and ended.finish == hand_pb2.HAND_FINISH_HAND))
                add(seat, "penalty_total", ended.points[seat])
        if kind == "match_ended":
            ended = body.match_ended
            winners = set(ended.winners)
            if member == "hokm":
                key = [(0 if set(t) & winners else 1, -max(ended.scores[s] for s in t))
                       for t in teams]
            else:
                key = [(0 if set(t) & winners else 1, min(ended.totals[s] for s in t))
                       for t in teams]
            ranks = [sum(1 for other in key if other < mine) for mine in key]
            for seat in range(size):
                entry = player(seat)
                entry["played"] += 1
                entry["won" if seat in winners else "lost"] += 1
                abandoned = holder[seat] and not players[seat].is_bot
                entry["abandoned"] += int(abandoned)
            return Finished(game_id, game_type, variant, subjects,
                            [p.is_bot for p in players], teams, winners, ranks,
                            [holder[s] and not players[s].is_bot for s in range(size)],
                            event.at_ms)
    return None


def recompute(logs: dict[str, list[log_pb2.Event]],
              rating_order: dict[str, int]) -> Expected:
    """Every figure the stats tables should hold for ``logs``, the matches rated in
    ``rating_order`` (game id → its rating number)."""
    expected = Expected()
    finished = [done for game_id, events in sorted(logs.items())
                if (done := read_log(game_id, events, expected)) is not None]
    assert sorted(rating_order) == sorted(done.game_id for done in finished)
    assert sorted(rating_order.values()) == list(range(1, len(finished) + 1))
    model = PlackettLuce()
    skill: dict[tuple[str, GameType, str], Any] = defaultdict(lambda: model.rating())
    for done in sorted(finished, key=lambda d: rating_order[d.game_id]):
        keys = [(s, done.game_type, done.variant) for s in done.subjects]
        before = {key: skill[key] for key in keys}
        in_teams: dict[str, set[int]] = defaultdict(set)
        for index, team in enumerate(done.teams):
            for seat in team:
                in_teams[done.subjects[seat]].add(index)
        rated = model.rate([[model.rating(mu=skill[keys[s]].mu, sigma=skill[keys[s]].sigma)
                             for s in team] for team in done.teams],
                           ranks=[float(r) for r in done.team_order])
        after = dict(before)
        seen = set()
        for team, results in zip(done.teams, rated, strict=True):
            for seat, result in zip(team, results, strict=True):
                subject = done.subjects[seat]
                if len(in_teams[subject]) > 1 or subject in seen:
                    continue
                seen.add(subject)
                after[keys[seat]] = result
                expected.players[keys[seat]]["rated"] += 1
        moment = datetime.datetime.fromtimestamp(done.at_ms / 1000, tz=datetime.UTC)
        year, week, _ = moment.isocalendar()
        periods = (f"W{year:04d}-{week:02d}", f"M{moment.year:04d}-{moment.month:02d}")
        counted_change: set[str] = set()
        for seat, key in enumerate(keys):
            won = seat in done.winners
            change = 0.0
            if key[0] not in counted_change:
                counted_change.add(key[0])
                change = ((after[key].mu - 3 * after[key].sigma)
                          - (before[key].mu - 3 * before[key].sigma))
            for period in periods:
                row = expected.periods.setdefault((*key, period),
                                                  {"played": 0, "won": 0, "rating_change": 0.0})
                row["played"] += 1
                row["won"] += int(won)
                row["rating_change"] += change
            expected.matches[(done.game_id, seat)] = {
                "subject": key[0], "game_type": done.game_type, "variant": done.variant,
                "ended_at_ms": done.at_ms, "won": won, "abandoned": done.abandoned[seat],
                "mu_before": before[key].mu, "sigma_before": before[key].sigma,
                "mu_after": after[key].mu, "sigma_after": after[key].sigma,
            }
        skill.update(after)
    for key, row in expected.players.items():
        rating = skill.get(key)
        if row["rated"]:
            assert rating is not None  # a rated subject's key went through ``skill``
            row["mu"] = rating.mu
            row["sigma"] = rating.sigma
        else:
            row["mu"] = 0.0
            row["sigma"] = 0.0
    return expected
