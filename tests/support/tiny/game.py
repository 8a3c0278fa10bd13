"""Tiny: a trick game that exists only in the tests, served through the registry alone.

It shows that a game outside the dast schema needs one module and
:func:`engine.registry.register`, and no change to any service (docs/architecture.md
"Adding a game"). Its messages (``tiny.proto``) travel packed in the ``other`` member of the
game oneofs.

Rules. Nine cards, three suits of three ranks (card ``suit*3 + rank``, rank 2 highest);
2 or 3 players. Each deal shuffles the nine cards with the match's deck key (the server
seed mixed with the client seeds, :mod:`engine.core.fairness`) under the label
``deal/<n>`` and gives every seat three (two players leave three unseen). The deal's
leader (seat ``(n-1) mod players``) plays any card; the others must follow the led suit
when they can; the highest card of the led suit takes the trick and leads the next.
A trick is a point; the first seat to ``target_score`` points wins, and a deal whose
three tricks are played is followed by the next. A match of ``target_score`` t ends within
``players * (t - 1) + 1`` tricks.

>>> from tests.support.tiny import tiny_pb2
>>> events = start(tiny_pb2.TinyRules(players=2), bytes(32), [common_pb2.Player()] * 2)
>>> state = replay(events)
>>> to_act(state), [len(hand) for hand in state.hands]
(0, [3, 3])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final

from google.protobuf.message import Message

from dast.v1 import common_pb2, log_pb2
from engine.core.budget import Budget
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.core.fairness import commit, deck_key
from engine.core.payload import unpack
from engine.core.protocol import MatchSetup, Policy, Schema, ViewSummary
from engine.core.rng import DeterministicRandom
from engine.core.summary import summary_of
from tests.support.tiny import tiny_pb2

GAME_TYPE: Final = 1001
"""A number outside the ``GameType`` enum: a game registered at run time."""
NAME: Final = "tiny"
SCHEMA: Final = Schema(
    field="other", rules=tiny_pb2.TinyRules, command=tiny_pb2.TinyCommand,
    event=tiny_pb2.TinyEvent, view=tiny_pb2.TinyView,
)
PLAYER_COUNTS: Final[tuple[int, ...]] = (3, 2)
TURN_STEPS: Final = 1
SUITS: Final = 3
RANKS: Final = 3
HAND_SIZE: Final = 3
DEFAULT_TARGET: Final = 3


class TinyCode(StrEnum):
    """Tiny's own violation codes."""

    MUST_FOLLOW_SUIT = "must_follow_suit"
    NOT_IN_HAND = "not_in_hand"


@dataclass(frozen=True, slots=True)
class TinyState:
    """The whole state; hands are sorted tuples of card ids."""

    seq: int
    rules: tiny_pb2.TinyRules
    players: tuple[common_pb2.Player, ...]
    server_seed: bytes
    key: bytes
    deal: int = 0
    hands: tuple[tuple[int, ...], ...] = ()
    trick: tuple[tuple[int, int], ...] = ()
    """``(seat, card)`` in the order played."""
    turn: int = 0
    scores: tuple[int, ...] = ()
    over: bool = False


def suit_of(card: int) -> int:
    """The suit of ``card``."""
    return card // RANKS


def _packed(payload: tiny_pb2.TinyEvent, at_ms: int) -> log_pb2.Event:
    event = log_pb2.Event(at_ms=at_ms)
    event.other.Pack(payload)
    return event


def _payload(event: log_pb2.Event) -> tiny_pb2.TinyEvent:
    if event.WhichOneof("game") != "other":
        raise InvalidCommand(Code.WRONG_GAME, f"seq {event.seq} is not a tiny event")
    return unpack(event.other, tiny_pb2.TinyEvent)


def resolve(rules: tiny_pb2.TinyRules) -> tiny_pb2.TinyRules:
    """``rules`` with every option set.

    :raises RuleViolation: ``invalid_players`` or ``invalid_rules``.
    """
    resolved = tiny_pb2.TinyRules(
        players=rules.players if rules.HasField("players") else PLAYER_COUNTS[0],
        target_score=rules.target_score if rules.HasField("target_score") else DEFAULT_TARGET,
        turn_seconds=rules.turn_seconds,
    )
    if resolved.players not in PLAYER_COUNTS:
        raise RuleViolation(Code.INVALID_PLAYERS, f"tiny is for 2 or 3, not {resolved.players}")
    if not 1 <= resolved.target_score <= 10:
        raise RuleViolation(Code.INVALID_RULES, "target_score must be 1 to 10")
    return resolved


def _deal(state: TinyState, at_ms: int) -> tiny_pb2.TinyEvent:
    number = state.deal + 1
    cards = DeterministicRandom(state.key, f"deal/{number}").shuffle(list(range(SUITS * RANKS)))
    dealt = tiny_pb2.HandsDealt(deal=number, leader=(number - 1) % len(state.players))
    for seat in range(len(state.players)):
        dealt.hands.add(cards=sorted(cards[seat * HAND_SIZE:(seat + 1) * HAND_SIZE]))
    return tiny_pb2.TinyEvent(hands_dealt=dealt)


class _Batch:
    """Events of one command, numbered on from ``state.seq`` and folded as they are made."""

    def __init__(self, state: TinyState | None, at_ms: int, automatic: bool) -> None:
        self.state = state
        self.at_ms = at_ms
        self.automatic = automatic
        self.events: list[log_pb2.Event] = []

    def add(self, payload: tiny_pb2.TinyEvent) -> None:
        event = _packed(payload, self.at_ms)
        event.seq = (self.state.seq if self.state else 0) + 1
        event.automatic = self.automatic
        self.events.append(event)
        self.state = evolve(self.state, event)

    def close(self) -> list[log_pb2.Event]:
        state = self.state
        assert state is not None
        if not state.over and state.rules.turn_seconds:
            self.events[-1].deadline_ms = self.at_ms + state.rules.turn_seconds * 1000
        return self.events


def start(rules: Any, seed: bytes, players: Sequence[common_pb2.Player], *, at_ms: int = 0,
          server_seed_chosen: bool = False) -> list[log_pb2.Event]:
    """The match's first events: the start (with the fairness record) and the first deal.

    :raises RuleViolation: for rules or a seat count tiny does not have.
    """
    resolved = resolve(rules)
    if len(players) != resolved.players:
        raise RuleViolation(Code.INVALID_PLAYERS,
                            f"{len(players)} seated for {resolved.players} players")
    fairness = common_pb2.Fairness(
        server_seed_commitment=commit(seed), server_seed=seed,
        client_seeds=[player.client_seed for player in players],
        server_seed_chosen=server_seed_chosen,
    )
    batch = _Batch(None, at_ms, False)
    batch.add(tiny_pb2.TinyEvent(match_started=tiny_pb2.MatchStarted(
        rules=resolved, players=players, fairness=fairness)))
    assert batch.state is not None
    batch.add(_deal(batch.state, at_ms))
    return batch.close()


def _card_of(command: log_pb2.Command) -> int:
    if command.WhichOneof("game") != "other":
        raise InvalidCommand(Code.WRONG_GAME, "not a tiny command")
    return unpack(command.other, tiny_pb2.TinyCommand).card


def decide(state: TinyState | None, command: log_pb2.Command) -> list[log_pb2.Event]:
    """The events of playing a card.

    :raises RuleViolation: not the seat's turn, a card it lacks, a suit it must follow.
    """
    card = _card_of(command)
    if state is None or state.over:
        raise RuleViolation(Code.GAME_OVER, "the match is not running")
    seat = command.seat
    if seat != state.turn:
        raise RuleViolation(Code.NOT_YOUR_TURN, f"seat {seat} played out of turn")
    hand = state.hands[seat]
    if card not in hand:
        raise RuleViolation(TinyCode.NOT_IN_HAND, f"seat {seat} has no card {card}")
    if state.trick:
        led = suit_of(state.trick[0][1])
        if suit_of(card) != led and any(suit_of(held) == led for held in hand):
            raise RuleViolation(TinyCode.MUST_FOLLOW_SUIT, f"seat {seat} must follow suit")
    batch = _Batch(state, command.at_ms, command.automatic)
    batch.add(tiny_pb2.TinyEvent(card_played=tiny_pb2.CardPlayed(seat=seat, card=card)))
    after = batch.state
    assert after is not None
    if len(after.trick) == len(after.players):
        led = suit_of(after.trick[0][1])
        winner = max((c, s) for s, c in after.trick if suit_of(c) == led)[1]
        scores = list(after.scores)
        scores[winner] += 1
        batch.add(tiny_pb2.TinyEvent(trick_taken=tiny_pb2.TrickTaken(seat=winner,
                                                                     scores=scores)))
        if scores[winner] >= after.rules.target_score:
            batch.add(tiny_pb2.TinyEvent(match_ended=tiny_pb2.MatchEnded(
                winner=winner, scores=scores, server_seed=after.server_seed)))
        elif not any(batch.state.hands):  # type: ignore[union-attr]
            batch.add(_deal(batch.state, command.at_ms))  # type: ignore[arg-type]
    return batch.close()


def evolve(state: TinyState | None, event: log_pb2.Event) -> TinyState:
    """Apply one event (trusted; only its seq is checked)."""
    expected = 1 if state is None else state.seq + 1
    if event.seq != expected:
        raise ValueError(f"event seq {event.seq} does not follow seq {expected - 1}")
    payload = _payload(event)
    kind = payload.WhichOneof("kind")
    if state is None:
        started = payload.match_started
        seats = len(started.players)
        return TinyState(
            seq=event.seq, rules=started.rules, players=tuple(started.players),
            server_seed=started.fairness.server_seed,
            key=deck_key(started.fairness.server_seed, list(started.fairness.client_seeds)),
            hands=((),) * seats, scores=(0,) * seats,
        )
    state = replace(state, seq=event.seq)
    if kind == "hands_dealt":
        dealt = payload.hands_dealt
        return replace(state, deal=dealt.deal, turn=dealt.leader, trick=(),
                       hands=tuple(tuple(hand.cards) for hand in dealt.hands))
    if kind == "card_played":
        played = payload.card_played
        hands = list(state.hands)
        hands[played.seat] = tuple(c for c in hands[played.seat] if c != played.card)
        return replace(state, hands=tuple(hands), trick=(*state.trick, (played.seat, played.card)),
                       turn=(played.seat + 1) % len(state.players))
    if kind == "trick_taken":
        taken = payload.trick_taken
        return replace(state, trick=(), turn=taken.seat, scores=tuple(taken.scores))
    if kind == "match_ended":
        return replace(state, over=True)
    raise ValueError(f"seq {event.seq}: unknown tiny event {kind}")


def replay(events: Iterable[log_pb2.Event]) -> TinyState:
    """Fold :func:`evolve` over a log."""
    state: TinyState | None = None
    for event in events:
        state = evolve(state, event)
    if state is None:
        raise ValueError("an empty log")
    return state


def _legal_cards(state: TinyState, seat: int) -> list[int]:
    if state.over or seat != state.turn:
        return []
    hand = state.hands[seat]
    if state.trick:
        led = suit_of(state.trick[0][1])
        following = [card for card in hand if suit_of(card) == led]
        if following:
            return following
    return list(hand)


def legal(state: TinyState, seat: int) -> list[log_pb2.Command]:
    """The seat's legal commands, by card id."""
    commands = []
    for card in _legal_cards(state, seat):
        command = log_pb2.Command(seat=seat)
        command.other.Pack(tiny_pb2.TinyCommand(card=card))
        commands.append(command)
    return commands


def view(state: TinyState, seat: int | None) -> tiny_pb2.TinyView:
    """What ``seat`` sees (None: a spectator sees no hand)."""
    shown = tiny_pb2.TinyView(
        is_spectator=seat is None, seat=seat or 0, players=state.players, is_over=state.over,
        trick=[card for _, card in state.trick], scores=state.scores,
    )
    if not state.over:
        shown.turn = state.turn
    if seat is not None:
        shown.hand.extend(state.hands[seat])
        shown.legal.extend(tiny_pb2.TinyCommand(card=c) for c in _legal_cards(state, seat))
    return shown


def redact(event: log_pb2.Event, seat: int | None) -> log_pb2.Event:
    """``event`` without the cards ``seat`` may not see (others' hands, the unrevealed seed)."""
    payload = _payload(event)
    kind = payload.WhichOneof("kind")
    if kind not in ("match_started", "hands_dealt"):
        return event
    if kind == "match_started":
        payload.match_started.fairness.server_seed = b""
    else:
        for index, hand in enumerate(payload.hands_dealt.hands):
            if index != seat:
                del hand.cards[:]
    hidden = log_pb2.Event()
    hidden.CopyFrom(event)
    hidden.other.Pack(payload)
    return hidden


def to_act(state: TinyState) -> int | None:
    """The seat to play (None once the match is over)."""
    return None if state.over else state.turn


def is_over(state: TinyState) -> bool:
    """Whether the match has ended."""
    return state.over


def setup_of(first_event: log_pb2.Event) -> MatchSetup:
    """What :func:`start` was given.

    :raises InvalidCommand: if the event is no tiny match start.
    """
    payload = _payload(first_event)
    if payload.WhichOneof("kind") != "match_started":
        raise InvalidCommand(Code.WRONG_GAME, f"seq {first_event.seq} is not a tiny start")
    started = payload.match_started
    return MatchSetup(
        rules=started.rules, players=tuple(started.players),
        server_seed_commitment=started.fairness.server_seed_commitment,
        server_seed=started.fairness.server_seed,
        server_seed_chosen=started.fairness.server_seed_chosen,
    )


def command_for(event: log_pb2.Event) -> log_pb2.Command | None:
    """The command a played card records (None for rules-caused events)."""
    payload = _payload(event)
    if payload.WhichOneof("kind") != "card_played":
        return None
    command = log_pb2.Command(seat=payload.card_played.seat, at_ms=event.at_ms,
                              automatic=event.automatic)
    command.other.Pack(tiny_pb2.TinyCommand(card=payload.card_played.card))
    return command


def revealed_seed(event: log_pb2.Event) -> bytes | None:
    """The server seed the final event reveals."""
    if event.WhichOneof("game") != "other":
        return None
    payload = _payload(event)
    return payload.match_ended.server_seed if payload.WhichOneof("kind") == "match_ended" else None


def seat_count(rules: tiny_pb2.TinyRules) -> int:
    """The seats ``rules`` ask for."""
    return int(resolve(rules).players)


def rules_for_players(players: int) -> tiny_pb2.TinyRules:
    """The default rules for ``players`` (0: three)."""
    rules = tiny_pb2.TinyRules(players=players or PLAYER_COUNTS[0])
    resolve(rules)
    return rules


def table_rules(rules: tiny_pb2.TinyRules, *, target_score: int, turn_seconds: int
                ) -> tiny_pb2.TinyRules:
    """``rules`` with the table's points to win and seconds per turn."""
    match = tiny_pb2.TinyRules()
    match.CopyFrom(rules)
    if target_score:
        match.target_score = target_score
    match.turn_seconds = turn_seconds
    return match


def _lowest(view: tiny_pb2.TinyView, rng: DeterministicRandom) -> tiny_pb2.TinyCommand:
    del rng
    return min(view.legal, key=lambda command: command.card)


def _highest(view: tiny_pb2.TinyView, rng: DeterministicRandom) -> tiny_pb2.TinyCommand:
    del rng
    return max(view.legal, key=lambda command: command.card)


def _any(view: tiny_pb2.TinyView, rng: DeterministicRandom) -> tiny_pb2.TinyCommand:
    if not view.legal:
        raise ValueError("nothing to play")
    return view.legal[rng.randbelow(len(view.legal))]


def bot_policies(budget: Budget) -> Mapping[str, Policy]:
    """Three plain policies; ``expert`` plays as ``greedy`` (no search needs a budget)."""
    del budget
    return {"random": _any, "greedy": _highest, "basic": _lowest, "expert": _highest}


def summarize(view_message: Message) -> ViewSummary:
    """What a tiny view says about its seat."""
    assert isinstance(view_message, tiny_pb2.TinyView)
    return summary_of(view_message, is_over=view_message.is_over)
