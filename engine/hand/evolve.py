"""Folding Hand's events into the state: ``evolve`` and ``replay``.

``evolve`` trusts its input (``decide`` checked the rules); it asserts only that the
events are numbered without a gap (ES ``mutate``). Every event records what changed
(the cards dealt, the meld after a lay-off, the new stock order), so replay needs no
random generator and no meld logic.

.. warning:: Replaying a seat's *redacted* copy of a log is not supported: the hidden
   cards are missing from it, so the hands it builds are wrong. Replay the stored log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dast.v1 import hand_pb2, log_pb2
from engine.core.cards import mask_of
from engine.core.fairness import commit
from engine.hand.codec import table_meld_of_proto, without
from engine.hand.rules import options_of
from engine.hand.state import HandState, Phase, copied, evolved


def evolve(state: HandState | None, event: log_pb2.Event) -> HandState:
    """The state after ``event`` (``state`` is None for the match's first event).

    :raises ValueError: if the event does not follow ``state`` (a gap in ``seq``) or is
        not a Hand event.
    """
    expected = 1 if state is None else state.seq + 1
    if event.seq != expected:
        raise ValueError(f"event seq {event.seq} does not follow seq {expected - 1}")
    payload = event.hand  # an empty message when the event is another game's
    kind = payload.WhichOneof("kind")
    if kind is None and event.WhichOneof("game") != "hand":
        raise ValueError(f"event seq {event.seq} is not a Hand event")
    if state is None:
        if kind != "match_started":
            raise ValueError("a Hand log starts with match_started")
        return _match_started(payload.match_started, event.seq)
    handler = _HANDLERS.get(kind or "")
    if handler is None:
        raise ValueError(f"event seq {event.seq}: unexpected {kind}")
    # Each handler makes the one copy of the state, numbered and stamped by the event.
    return handler(state, getattr(payload, kind or ""), event.seq, event.deadline_ms)


def replay(events: Iterable[log_pb2.Event]) -> HandState:
    """Fold :func:`evolve` over a whole log.

    :raises ValueError: if the log is empty or broken (see :func:`evolve`).
    """
    state: HandState | None = None
    for event in events:
        state = evolve(state, event)
    if state is None:
        raise ValueError("cannot replay an empty log")
    return state


def _match_started(message: hand_pb2.HandMatchStarted, seq: int) -> HandState:
    rules = hand_pb2.HandRules()
    rules.CopyFrom(message.rules)
    options = options_of(rules)
    fairness = message.fairness
    return HandState(
        seq=seq,
        options=options,
        rules=rules,
        players=tuple(message.players),
        commitment=fairness.server_seed_commitment or commit(fairness.server_seed),
        client_seeds=tuple(fairness.client_seeds),
        server_seed=fairness.server_seed,
        totals=(0,) * options.players,
    )


def _round_started(
    state: HandState, message: hand_pb2.HandRoundStarted, seq: int, deadline_ms: int
) -> HandState:
    seats = state.seats
    return evolved(
        state,
        seq=seq,
        deadline_ms=deadline_ms,
        phase=Phase.BETWEEN_DEALS,
        round=message.round,
        deal=message.deal,
        dealer=message.dealer,
        turn=message.dealer,
        hands=(0,) * seats,
        stock=(),
        discard=(),
        melds=(),
        shown=0,
        opened=(False,) * seats,
        must_use=None,
        opened_this_turn=False,
        opening_total=0,
        opening_to_beat=0,
        turn_first_meld=0,
        used_older_melds=False,
        highest_opening=0,
        restocks=0,
    )


def _cards_dealt(
    state: HandState, message: hand_pb2.HandCardsDealt, seq: int, deadline_ms: int
) -> HandState:
    hands = [0] * state.seats
    for dealt in message.hands:
        hands[dealt.seat] = mask_of(dealt.cards)
    return evolved(
        state,
        seq=seq,
        deadline_ms=deadline_ms,
        phase=Phase.FIRST_DISCARD,
        turn=state.next_seat(state.dealer),
        hands=tuple(hands),
        stock=tuple(message.stock),
    )


def _card_drawn(
    state: HandState, message: hand_pb2.CardDrawn, seq: int, deadline_ms: int
) -> HandState:
    hands = list(state.hands)
    if message.HasField("card"):
        hands[message.seat] |= 1 << message.card
    # A turn's flags start afresh with its draw (they outlive the discard that ends the
    # turn so that the round's end can tell a "hand").
    turn_starts = {
        "seq": seq,
        "deadline_ms": deadline_ms,
        "phase": _PLAY,
        "hands": tuple(hands),
        "opened_this_turn": False,
        "opening_total": 0,
        "opening_to_beat": state.highest_opening,
        "turn_first_meld": len(state.melds),
        "used_older_melds": False,
    }
    if message.from_discard:
        turn_starts["discard"] = state.discard[:-1]
        turn_starts["shown"] = state.shown | (1 << message.card)
        turn_starts["must_use"] = message.card
    else:
        turn_starts["stock"] = state.stock[1:]
    return copied(state, turn_starts)


def _melds_laid(
    state: HandState, message: hand_pb2.MeldsLaid, seq: int, deadline_ms: int
) -> HandState:
    hands = list(state.hands)
    laid: list[int] = []
    melds = list(state.melds)
    for proto in message.melds:
        melds.append(table_meld_of_proto(proto))
        laid.extend(proto.cards)
    hands[message.seat] = without(hands[message.seat], laid)
    opened = list(state.opened)
    opened[message.seat] = True
    must_use = None if state.must_use in laid else state.must_use
    if not message.opening:
        return evolved(
            state,
            seq=seq, deadline_ms=deadline_ms, hands=tuple(hands), melds=tuple(melds),
            opened=tuple(opened), must_use=must_use,
        )
    # Every lay-down of the opening turn counts towards the opening (rules "Opening").
    total = state.opening_total + message.total
    return evolved(
        state,
        seq=seq,
        deadline_ms=deadline_ms,
        hands=tuple(hands),
        melds=tuple(melds),
        opened=tuple(opened),
        must_use=must_use,
        opened_this_turn=True,
        opening_total=total,
        highest_opening=max(state.highest_opening, total),
    )


def _card_laid_off(
    state: HandState, message: hand_pb2.CardLaidOff, seq: int, deadline_ms: int
) -> HandState:
    hands = list(state.hands)
    hands[message.seat] = without(hands[message.seat], (message.card,))
    melds = list(state.melds)
    melds[message.meld.id] = table_meld_of_proto(message.meld)
    return evolved(
        state,
        seq=seq,
        deadline_ms=deadline_ms,
        hands=tuple(hands),
        melds=tuple(melds),
        used_older_melds=state.used_older_melds or message.meld.id < state.turn_first_meld,
    )


def _joker_retrieved(
    state: HandState, message: hand_pb2.JokerRetrieved, seq: int, deadline_ms: int
) -> HandState:
    hands = list(state.hands)
    hands[message.seat] = without(hands[message.seat], message.cards) | (1 << message.joker)
    melds = list(state.melds)
    melds[message.meld.id] = table_meld_of_proto(message.meld)
    return evolved(
        state,
        seq=seq,
        deadline_ms=deadline_ms,
        hands=tuple(hands),
        melds=tuple(melds),
        shown=state.shown | (1 << message.joker),
        used_older_melds=state.used_older_melds or message.meld.id < state.turn_first_meld,
    )


def _card_discarded(
    state: HandState, message: hand_pb2.CardDiscarded, seq: int, deadline_ms: int
) -> HandState:
    hands = list(state.hands)
    seat, card = message.seat, message.card
    hands[seat] &= ~(1 << card)
    return copied(state, {
        "seq": seq,
        "deadline_ms": deadline_ms,
        "phase": _DRAW,
        "turn": (seat + 1) % state.options.players,
        "hands": tuple(hands),
        "discard": (*state.discard, card),
        "must_use": None,
    })


_DRAW, _PLAY = Phase.DRAW, Phase.PLAY
"""Read once: an enum member lookup is not free, and every draw and discard reads one."""


def _stock_restocked(
    state: HandState, message: hand_pb2.StockRestocked, seq: int, deadline_ms: int
) -> HandState:
    return evolved(
        state,
        seq=seq, deadline_ms=deadline_ms, stock=tuple(message.stock),
        discard=state.discard[-1:], restocks=message.restocks,
    )


def _round_voided(
    state: HandState, message: hand_pb2.RoundVoided, seq: int, deadline_ms: int
) -> HandState:
    return evolved(state, seq=seq, deadline_ms=deadline_ms, phase=Phase.BETWEEN_DEALS)


def _round_ended(
    state: HandState, message: hand_pb2.HandRoundEnded, seq: int, deadline_ms: int
) -> HandState:
    return evolved(
        state,
        seq=seq,
        deadline_ms=deadline_ms,
        phase=Phase.BETWEEN_DEALS,
        totals=tuple(message.totals),
        rounds_played=state.rounds_played + 1,
    )


def _match_ended(
    state: HandState, message: hand_pb2.HandMatchEnded, seq: int, deadline_ms: int
) -> HandState:
    return evolved(
        state,
        seq=seq,
        deadline_ms=deadline_ms,
        phase=Phase.MATCH_OVER,
        winners=tuple(message.winners),
        server_seed=message.server_seed or state.server_seed,
    )


_HANDLERS: dict[str, Callable[[HandState, Any, int, int], HandState]] = {
    "round_started": _round_started,
    "cards_dealt": _cards_dealt,
    "card_drawn": _card_drawn,
    "melds_laid": _melds_laid,
    "card_laid_off": _card_laid_off,
    "joker_retrieved": _joker_retrieved,
    "card_discarded": _card_discarded,
    "stock_restocked": _stock_restocked,
    "round_voided": _round_voided,
    "round_ended": _round_ended,
    "match_ended": _match_ended,
}
