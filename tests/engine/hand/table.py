"""Scenario helpers for Hand's tests: deal chosen hands in card notation, act, look.

``table(["7♠ 8♠ 9♠ …", "…"], stock="…")`` replays a hand-written log (match start, round
start, a deal of exactly those cards) and returns the state, the first player (after the
dealer, seat 0) to discard. ``turn_of`` moves a state to a seat's draw or play phase with
a chosen discard pile, the way OpenSpiel's tests fix a deal with ``deal_hands``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dast.v1 import common_pb2, hand_pb2, log_pb2
from engine import hand
from engine.core.cards import mask_of
from engine.core.fairness import commit
from engine.hand.cards import parse_hand_cards
from engine.hand.codec import hand_command, hand_event, meld_spec_of
from engine.hand.rules import resolve_rules
from engine.hand.solver import GoOutPlan, Penalty
from engine.hand.state import HandState, Phase

SEED = bytes(range(32))


def cards(text: str) -> list[int]:
    """Card ids from notation: ``"A♠ A♠' JK1"``."""
    return parse_hand_cards(text)


def players(count: int) -> list[common_pb2.Player]:
    """``count`` players with distinct client seeds."""
    return [
        common_pb2.Player(player_id=f"p{seat}", client_seed=bytes([seat])) for seat in range(count)
    ]


def table(
    hands: Sequence[str],
    *,
    stock: str = "2♦' 3♦' 4♦' 5♦' 6♦'",
    rules: hand_pb2.HandRules | None = None,
    dealer: int = 0,
) -> HandState:
    """The state right after a deal of exactly ``hands`` (seat order) and ``stock`` (top
    first), built by replaying a hand-written log."""
    resolved = resolve_rules(rules or hand_pb2.HandRules(), len(hands))
    group = players(len(hands))
    events = [
        hand_event(
            match_started=hand_pb2.HandMatchStarted(
                rules=resolved,
                players=group,
                fairness=common_pb2.Fairness(
                    server_seed_commitment=commit(SEED),
                    client_seeds=[p.client_seed for p in group],
                    server_seed=SEED,
                ),
            )
        ),
        hand_event(round_started=hand_pb2.HandRoundStarted(round=1, dealer=dealer, deal=1)),
        hand_event(
            cards_dealt=hand_pb2.HandCardsDealt(
                hands=[
                    hand_pb2.HandDealtCards(seat=seat, cards=cards(text), count=len(cards(text)))
                    for seat, text in enumerate(hands)
                ],
                stock=cards(stock),
                stock_count=len(cards(stock)),
            )
        ),
    ]
    for seq, event in enumerate(events, start=1):
        event.seq = seq
    return hand.replay(events)


def turn_of(
    state: HandState,
    seat: int,
    *,
    phase: Phase = Phase.DRAW,
    discard: str = "",
    opened: Sequence[int] = (),
) -> HandState:
    """``state`` with ``seat`` to act in ``phase``, the given discard pile (bottom first)
    and the given seats already opened."""
    return replace(
        state,
        phase=phase,
        turn=seat,
        discard=tuple(cards(discard)),
        opened=tuple(s in opened for s in range(state.seats)),
    )


def with_hand(state: HandState, seat: int, text: str) -> HandState:
    """``state`` with ``seat`` holding exactly ``text``."""
    hands = list(state.hands)
    hands[seat] = mask_of(cards(text))
    return replace(state, hands=tuple(hands))


def act(state: HandState, seat: int, **move: Any) -> tuple[list[log_pb2.Event], HandState]:
    """Decide one command (e.g. ``discard=hand_pb2.Discard(card=…)``) and fold its events."""
    events = hand.decide(state, hand_command(seat, **move))
    for event in events:
        state = hand.evolve(state, event)
    return events, state


def kinds(events: Sequence[log_pb2.Event]) -> list[str]:
    """The Hand event kinds of a batch, in order."""
    return [str(e.hand.WhichOneof("kind")) for e in events]


def spec(text: str, **jokers: str) -> hand_pb2.MeldSpec:
    """A meld spec from notation; jokers' faces by name: ``spec("5♠ JK1 7♠", JK1="6♠")``."""
    from engine.core.cards import parse_card

    faces = [
        hand_pb2.JokerFace(joker=cards(name)[0], face=parse_card(face))
        for name, face in jokers.items()
    ]
    return hand_pb2.MeldSpec(cards=cards(text), jokers=faces)


def lay(*specs: hand_pb2.MeldSpec) -> hand_pb2.LayMelds:
    """A LayMelds of the given specs."""
    return hand_pb2.LayMelds(melds=list(specs))


def play_plan(state: HandState, seat: int, plan: GoOutPlan | Penalty) -> HandState:
    """Send a solver's plan to the engine, step by step as its docstring orders them (the
    opening's melds in one ``LayMelds``, the retrievals, the other melds, the lay-offs;
    table meld ``i`` is ``state.melds[i]``, new ones numbered after them as the engine
    does); return the state before the discard. Raises what ``decide`` raises."""
    ids = [table_meld.id for table_meld in state.melds]

    def send(**move: Any) -> None:
        nonlocal state
        state = act(state, seat, **move)[1]

    opening, later = plan.melds[: plan.opening_melds], plan.melds[plan.opening_melds:]
    if opening:
        send(lay_melds=hand_pb2.LayMelds(melds=[meld_spec_of(m) for m in opening]))
    for retrieval in plan.retrievals:
        send(retrieve_joker=hand_pb2.RetrieveJoker(
            meld_id=ids[retrieval.meld_index], cards=retrieval.cards))
    if later:
        send(lay_melds=hand_pb2.LayMelds(melds=[meld_spec_of(m) for m in later]))
    for step in plan.lay_offs:
        index = step.meld_index
        move = hand_pb2.LayOff(meld_id=ids[index] if index < len(ids) else index, card=step.card)
        if step.joker_face is not None:
            move.joker_face = step.joker_face
        send(lay_off=move)
    return state
