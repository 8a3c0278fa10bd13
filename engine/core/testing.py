"""Playing whole matches, and the random-simulation harness every game is tested with.

:func:`play_match` plays a match with one policy per seat (bots, for the CLI's ``sim``, the
golden logs and the benchmarks). :func:`random_sim` is the harness of docs/architecture.md "Random
simulation" (after OpenSpiel's ``RandomSimTest``), generic over any :class:`Game`: it plays
random legal matches from fixed seeds and checks at every step that

- seats not to act have no legal commands, and the seat to act has some;
- legal entries are unique and come in the same order when asked twice;
- legal commands are accepted (all, or a sample of ``legal_sample`` when there are many;
  a choice entry's commands are drawn through :class:`~engine.core.legal.LegalEntries`),
  and random commands (``fuzz``) that are not legal raise a ``RuleViolation``, never another
  exception, while legal ones are accepted;
- ``replay`` of the log so far equals the state evolved step by step (``replay_every``:
  every step, or only at steps below 10 and at powers of two);
- every event and view survives a proto encode/decode round trip;
- no redacted event and no view meant for a seat (or a spectator) names a card hidden from
  it (the game's :class:`Visibility` hooks say which cards those are);
- the game's own invariants (``check_state``, after each command's events) hold.

At the end the match must be over within ``max_commands``. A failure raises
:class:`SimulationFailure`, whose message holds the seed and the command log to replay it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import text_format
from google.protobuf.message import Message

from dast.v1 import common_pb2, log_pb2
from engine.core.errors import RuleViolation
from engine.core.legal import LegalEntries
from engine.core.payload import put
from engine.core.protocol import Game
from engine.core.rng import DeterministicRandom

Policy = Callable[[Any, DeterministicRandom], Message]
"""``(view, rng) -> the game's command payload`` (e.g. a ``HokmCommand``)."""


def _rng_key(rng_seed: int | bytes) -> bytes:
    return rng_seed if isinstance(rng_seed, bytes) else rng_seed.to_bytes(16, "big", signed=True)


def bot_players(seats: int) -> list[common_pb2.Player]:
    """Bot players named ``bot-0`` … for a table of ``seats``."""
    return [
        common_pb2.Player(player_id=f"bot-{seat}", display_name=f"Bot {seat}", is_bot=True)
        for seat in range(seats)
    ]


def play_bots(
    game: Game,
    bots: Mapping[str, Policy],
    rules: Message,
    seed: bytes,
    policies: Sequence[str | Policy],
    rng_seed: int | bytes,
    *,
    players: Sequence[common_pb2.Player] | None = None,
    at_ms: int = 0,
    step_ms: int = 1000,
) -> list[log_pb2.Event]:
    """:func:`play_match` with policies named by ``bots`` keys (or given directly) and, by
    default, :func:`bot_players` in the seats; the full, unredacted log.

    :raises KeyError: for an unknown bot name.
    """
    chosen = [bots[p] if isinstance(p, str) else p for p in policies]
    seated = bot_players(len(chosen)) if players is None else players
    return play_match(game, rules, seed, seated, chosen, rng_seed, at_ms=at_ms, step_ms=step_ms)


def play_match(
    game: Game,
    rules: Message,
    seed: bytes,
    players: Sequence[common_pb2.Player],
    policies: Sequence[Policy],
    rng_seed: int | bytes,
    *,
    at_ms: int = 0,
    step_ms: int = 1000,
    max_commands: int = 1_000_000,
) -> list[log_pb2.Event]:
    """Play a whole match: the seat to act follows its policy over its own view, with its
    own stream ``DeterministicRandom(rng_seed, "bot/<seat>")``; command ``i`` is stamped
    ``at_ms + (i + 1) * step_ms``. Returns the full log.

    :raises RuntimeError: if the match is not over after ``max_commands`` commands.
    :raises RuleViolation: if ``start`` refuses the setup or a policy breaks a rule.
    """
    key = _rng_key(rng_seed)
    rngs = [DeterministicRandom(key, f"bot/{seat}") for seat in range(len(players))]
    events = game.start(rules, seed, players, at_ms=at_ms)
    state = game.replay(events)
    for index in range(max_commands):
        seat = game.to_act(state)
        if seat is None:
            return events
        payload = policies[seat](game.view(state, seat), rngs[seat])
        command = log_pb2.Command(seat=seat, at_ms=at_ms + (index + 1) * step_ms)
        put(command, game.SCHEMA, payload)
        for event in game.decide(state, command):
            state = game.evolve(state, event)
            events.append(event)
    raise RuntimeError(f"the match is not over after {max_commands} commands")


@dataclass(frozen=True, slots=True)
class Visibility:
    """How a game tells the harness which cards a seat may see (cards are ints)."""

    hidden_mask: Callable[[Any, int | None], int]
    """The cards that exist in a state and that a seat (None: spectator) may not see."""
    event_cards: Callable[[log_pb2.Event], int]
    """Every card an event names, as a mask."""
    view_cards: Callable[[Any], int]
    """Every card a view names, as a mask."""


@dataclass(slots=True)
class SimReport:
    """What :func:`random_sim` played."""

    matches: int = 0
    commands: int = 0
    events: int = 0
    fuzzed: int = 0
    logs: list[list[log_pb2.Event]] = field(default_factory=list)


class SimulationFailure(AssertionError):
    """A check of :func:`random_sim` failed; the message says how to replay it."""


def sim_seeds(count: int, label: str = "sim") -> list[bytes]:
    """``count`` fixed 32-byte server seeds: ``sha256("<label>/<i>")``."""
    return [hashlib.sha256(f"{label}/{i}".encode()).digest() for i in range(count)]


class _Match:
    """One simulated match: its seed, its commands so far, and the failure message."""

    def __init__(self, game: Game, seed: bytes) -> None:
        self.game = game
        self.seed = seed
        self.commands: list[log_pb2.Command] = []

    def fail(self, what: str) -> SimulationFailure:
        lines = [
            f"{self.game.NAME} simulation failed: {what}",
            f"server seed: {self.seed.hex()}",
            "commands:",
            *(text_format.MessageToString(c, as_one_line=True) for c in self.commands),
        ]
        return SimulationFailure("\n".join(lines))


def _round_trip(message: Message) -> bool:
    copy = type(message)()
    copy.ParseFromString(message.SerializeToString())
    return bool(copy == message)


def random_sim(
    game: Game,
    rules: Message,
    players: Sequence[common_pb2.Player],
    seeds: Sequence[bytes],
    visibility: Visibility,
    *,
    fuzz: Callable[[DeterministicRandom, int], log_pb2.Command] | None = None,
    check_state: Callable[[Any], None] | None = None,
    legal_sample: int = 6,
    replay_every: bool = False,
    max_commands: int = 20_000,
    keep_logs: bool = False,
) -> SimReport:
    """Play one random legal match per seed and check it as the module docstring says.

    :raises SimulationFailure: on the first failed check, with the seed and command log.
    """
    report = SimReport()
    seats = len(players)
    entries = LegalEntries(game)
    for seed in seeds:
        match = _Match(game, seed)
        rng = DeterministicRandom(seed, "sim")
        events = game.start(rules, seed, players)
        state: Any = None
        for event in events:
            state = game.evolve(state, event)
            _check_event(match, game, state, event, seats, visibility)
        step = 0
        while (seat := game.to_act(state)) is not None:
            if step >= max_commands:
                raise match.fail(f"not over after {max_commands} commands")
            options = _check_legal(match, game, state, seat, seats)
            _check_views(match, game, state, seats, visibility)
            sample = (
                list(entries.commands(options))
                if entries.count(options) <= legal_sample
                else [entries.random(options, rng.randbelow) for _ in range(legal_sample)]
            )
            for command in sample:
                _decide(match, game, state, command, must_pass=True)
            if fuzz is not None:
                fuzzed = fuzz(rng, seats)
                _fuzz(match, game, state, fuzzed, entries.covers(options, fuzzed))
                report.fuzzed += 1
            command = entries.random(options, rng.randbelow)
            command.at_ms = (step + 1) * 1000
            match.commands.append(command)
            batch = _decide(match, game, state, command, must_pass=True)
            if not batch:
                raise match.fail("a legal command produced no event")
            for event in batch:
                state = game.evolve(state, event)
                _check_event(match, game, state, event, seats, visibility)
            if check_state is not None:
                try:
                    check_state(state)
                except AssertionError as error:
                    where = state_seq(batch)
                    raise match.fail(f"invariant broken at seq {where}: {error}") from error
            events.extend(batch)
            step += 1
            if replay_every or step < 10 or step & (step - 1) == 0:
                _check_replay(match, game, state, events)
        _check_replay(match, game, state, events)
        _check_views(match, game, state, seats, visibility)
        if not game.is_over(state):
            raise match.fail("nobody is to act but the match is not over")
        report.matches += 1
        report.commands += step
        report.events += len(events)
        if keep_logs:
            report.logs.append(events)
    return report


def state_seq(batch: list[log_pb2.Event]) -> int:
    """The seq of a batch's last event."""
    return batch[-1].seq


def _decide(
    match: _Match, game: Game, state: Any, command: log_pb2.Command, *, must_pass: bool
) -> list[log_pb2.Event]:
    try:
        return game.decide(state, command)
    except RuleViolation as error:
        if must_pass:
            raise match.fail(f"legal command refused ({error.code}): {command}") from error
        raise
    except Exception as error:
        raise match.fail(f"decide raised {error!r} for {command}") from error


def _fuzz(match: _Match, game: Game, state: Any, command: log_pb2.Command, is_legal: bool) -> None:
    try:
        game.decide(state, command)
    except RuleViolation:
        if is_legal:
            raise match.fail(f"legal command refused: {command}") from None
        return
    except Exception as error:
        raise match.fail(f"decide raised {error!r} for {command}") from error
    if not is_legal:
        raise match.fail(f"an illegal command was accepted: {command}")


def _check_legal(
    match: _Match, game: Game, state: Any, seat: int, seats: int
) -> list[log_pb2.Command]:
    for other in range(seats):
        if other != seat and game.legal(state, other):
            raise match.fail(f"seat {other} has legal commands while seat {seat} is to act")
    options = game.legal(state, seat)
    if not options:
        raise match.fail(f"seat {seat} is to act but has no legal command")
    encoded = [o.SerializeToString(deterministic=True) for o in options]
    if len(set(encoded)) != len(encoded):
        raise match.fail("legal commands are not unique")
    again = [o.SerializeToString(deterministic=True) for o in game.legal(state, seat)]
    if again != encoded:
        raise match.fail("legal commands come in a different order when asked again")
    return options


def _check_event(
    match: _Match, game: Game, state: Any, event: log_pb2.Event, seats: int, vis: Visibility
) -> None:
    if not _round_trip(event):
        raise match.fail(f"event seq {event.seq} does not survive a proto round trip")
    for seat in (*range(seats), None):
        leaked = vis.event_cards(game.redact(event, seat)) & vis.hidden_mask(state, seat)
        if leaked:
            raise match.fail(f"seq {event.seq} redacted for seat {seat} shows hidden cards "
                             f"(mask {leaked:#x})")


def _check_views(match: _Match, game: Game, state: Any, seats: int, vis: Visibility) -> None:
    for seat in (*range(seats), None):
        seen = game.view(state, seat)
        if not _round_trip(seen):
            raise match.fail(f"the view of seat {seat} does not survive a proto round trip")
        leaked = vis.view_cards(seen) & vis.hidden_mask(state, seat)
        if leaked:
            raise match.fail(f"the view of seat {seat} shows hidden cards (mask {leaked:#x})")


def _check_replay(match: _Match, game: Game, state: Any, events: list[log_pb2.Event]) -> None:
    if game.replay(events) != state:
        raise match.fail(f"replaying {len(events)} events differs from the evolved state")
