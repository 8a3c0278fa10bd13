"""What a seat (or a spectator) may see of a Hand match: ``view`` and ``redact``.

Hidden from a seat: the other seats' hands, the stock's order, and the card another seat
drew from the stock. Hidden from everyone until the match's end: the server seed. Public:
every card that reached the table or the discard pile (a card taken from the discard pile
was seen there), and the hands left at a round's end (they are counted in public).
"""

from __future__ import annotations

from dast.v1 import hand_pb2, log_pb2
from engine.core.cards import iter_cards
from engine.hand.codec import meld_spec_of, table_meld_to_proto
from engine.hand.legal import legal, meld_options
from engine.hand.state import HandState, Phase


def view(state: HandState, seat: int | None) -> hand_pb2.HandView:
    """What ``seat`` sees now (``None``: a spectator, who sees no hand)."""
    message = hand_pb2.HandView(
        is_spectator=seat is None,
        seat=seat or 0,
        players=state.players,
        rules=state.rules,
        phase=hand_pb2.HandPhase.ValueType(state.phase),
        round=state.round,
        dealer=state.dealer,
        stock_count=len(state.stock),
        discard_pile=state.discard,
        melds=[table_meld_to_proto(m) for m in state.melds],
        opened=state.opened,
        totals=state.totals,
        hand_counts=[hand.bit_count() for hand in state.hands],
        highest_opening=state.highest_opening,
        restocks=state.restocks,
        winners=state.winners,
    )
    acting = state.phase in (Phase.FIRST_DISCARD, Phase.DRAW, Phase.PLAY)
    if acting:
        message.turn = state.turn
        message.deadline_ms = state.deadline_ms
        if state.must_use is not None:
            message.must_use = state.must_use
    if seat is not None and state.hands:
        message.hand.extend(iter_cards(state.hands[seat]))
        message.legal.extend(command.hand for command in legal(state, seat))
        message.meld_options.extend(meld_spec_of(m) for m in meld_options(state, seat))
    return message


def redact(event: log_pb2.Event, seat: int | None) -> log_pb2.Event:
    """``event`` as ``seat`` may see it (``None``: a spectator); the input is not changed."""
    if event.WhichOneof("game") != "hand":
        return event
    kind = event.hand.WhichOneof("kind")
    if kind not in ("match_started", "cards_dealt", "card_drawn", "stock_restocked"):
        return event
    copy = log_pb2.Event()
    copy.CopyFrom(event)
    payload = copy.hand
    if kind == "match_started":
        payload.match_started.fairness.ClearField("server_seed")
    elif kind == "cards_dealt":
        payload.cards_dealt.ClearField("stock")
        for dealt in payload.cards_dealt.hands:
            if dealt.seat != seat:
                dealt.ClearField("cards")
    elif kind == "card_drawn":
        drawn = payload.card_drawn
        if not drawn.from_discard and drawn.seat != seat:
            drawn.ClearField("card")
    else:
        payload.stock_restocked.ClearField("stock")
    return copy
