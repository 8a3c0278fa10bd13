"""Notation helpers for Hokm scenario tests: build positions from card text, make commands,
read events (the ``deal_hands`` habit of OpenSpiel's tests, FEN-like positions of PC)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.cards import mask_of, parse_cards, parse_suit
from engine.hokm.state import FinishedTrick, HokmState, Phase

SEED = hashlib.sha256(b"hokm-tests").digest()
VARIANT = {4: hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, 3: hokm_pb2.HOKM_VARIANT_THREE_PLAYERS,
           2: hokm_pb2.HOKM_VARIANT_TWO_PLAYERS}


def players(seats: int) -> list[common_pb2.Player]:
    return [common_pb2.Player(player_id=f"p{s}", display_name=f"P{s}") for s in range(seats)]


def rules(seats: int = 4, **options: Any) -> hokm_pb2.HokmRules:
    return hokm_pb2.HokmRules(variant=VARIANT[seats], **options)


def started(
    seats: int = 4, seed: bytes = SEED, **options: Any
) -> tuple[list[log_pb2.Event], HokmState]:
    """The start events of a match and the state after them."""
    events = hokm.start(rules(seats, **options), seed, players(seats))
    return events, hokm.replay(events)


def cards(text: str) -> int:
    """A card mask from notation: ``"A♠ 10h 2d"``."""
    return mask_of(parse_cards(text))


def position(
    hands: Sequence[str],
    *,
    trump: str = "♠",
    hakem: int = 0,
    turn: int | None = None,
    leader: int | None = None,
    trick: str = "",
    tricks_won: Sequence[int] | None = None,
    scores: Sequence[int] | None = None,
    phase: Phase = Phase.PLAY,
    pile_a: str = "",
    pile_b: str = "",
    set_aside: str = "",
    **options: Any,
) -> HokmState:
    """A state in the middle of round 1 with the given hands (one text per seat), trump
    and current trick (played by seats from ``leader`` on)."""
    seats = len(hands)
    _, base = started(seats, **options)
    played = parse_cards(trick)
    lead = hakem if leader is None else leader
    won = tuple(tricks_won) if tricks_won is not None else (0,) * seats
    # Finished tricks only need to exist for numbering; their cards are not re-checked.
    history = tuple(FinishedTrick(0, (), 0) for _ in range(sum(won)))
    return base._replace(
        phase=phase,
        hakem=hakem,
        trump=parse_suit(trump) if trump else -1,
        turn=(lead + len(played)) % seats if turn is None else turn,
        leader=lead,
        hands=tuple(cards(h) for h in hands),
        trick=tuple(played),
        tricks=history,
        tricks_won=won,
        played=mask_of(played),
        scores=tuple(scores) if scores is not None else (0,) * seats,
        pile_a=tuple(parse_cards(pile_a)),
        pile_b=tuple(parse_cards(pile_b)),
        set_aside=cards(set_aside),
    )


def play(seat: int, card: str, *, at_ms: int = 0, automatic: bool = False) -> log_pb2.Command:
    command = log_pb2.Command(seat=seat, at_ms=at_ms, automatic=automatic)
    command.hokm.play_card.card = parse_cards(card)[0]
    return command


def declare(seat: int, suit: str, *, at_ms: int = 0) -> log_pb2.Command:
    command = log_pb2.Command(seat=seat, at_ms=at_ms)
    command.hokm.declare_trump.suit = parse_suit(suit) + 1  # type: ignore[assignment]
    return command


def set_aside(seat: int, text: str) -> log_pb2.Command:
    command = log_pb2.Command(seat=seat)
    command.hokm.set_aside_cards.cards.extend(parse_cards(text))
    return command


def take_pile(seat: int, pile: int) -> log_pb2.Command:
    command = log_pb2.Command(seat=seat)
    command.hokm.take_pile_card.pile = pile
    return command


def kinds(events: Sequence[log_pb2.Event]) -> list[str]:
    return [e.hokm.WhichOneof("kind") or "" for e in events]


def payload(event: log_pb2.Event) -> Any:
    return getattr(event.hokm, event.hokm.WhichOneof("kind") or "")


def first(events: Sequence[log_pb2.Event], kind: str) -> Any:
    """The payload of the first event of ``kind``."""
    for event in events:
        if event.hokm.WhichOneof("kind") == kind:
            return payload(event)
    raise AssertionError(f"no {kind} in {kinds(events)}")


def apply(state: HokmState, events: Sequence[log_pb2.Event]) -> HokmState:
    for event in events:
        state = hokm.evolve(state, event)
    return state


def run(state: HokmState, *commands: log_pb2.Command) -> tuple[list[log_pb2.Event], HokmState]:
    """Decide and apply commands in turn; all the events and the final state."""
    events: list[log_pb2.Event] = []
    for command in commands:
        batch = hokm.decide(state, command)
        state = apply(state, batch)
        events.extend(batch)
    return events, state


def violation(state: HokmState, command: log_pb2.Command) -> str:
    """The code of the violation ``command`` raises (fails if it is accepted)."""
    from engine.core.errors import RuleViolation

    try:
        hokm.decide(state, command)
    except RuleViolation as error:
        return error.code
    raise AssertionError(f"{command} was accepted")
