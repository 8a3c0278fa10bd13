"""Which cards each seat may see in Hand: the hooks of the random-simulation harness
(:class:`engine.core.testing.Visibility`), shared by the engine's property tests and the
game service's end-to-end tests (docs/rules/hand.md: other hands and the stock are hidden)."""

from __future__ import annotations

from dast.v1 import hand_pb2, log_pb2
from engine.core.testing import Visibility
from engine.hand.state import HandState, Phase


def table_cards(state: HandState) -> int:
    """Every card in the melds on the table."""
    mask = 0
    for table_meld in state.melds:
        for card in table_meld.meld.cards:
            mask |= 1 << card
    return mask


def stock_mask(state: HandState) -> int:
    """Every card of the face-down stock."""
    mask = 0
    for card in state.stock:
        mask |= 1 << card
    return mask


def hidden_mask(state: HandState, seat: int | None) -> int:
    """The stock, and every other seat's cards not seen in public (rules: hands are shown
    when a round ends)."""
    hidden = stock_mask(state)
    hands_shown = state.phase is Phase.MATCH_OVER or (
        state.phase is Phase.BETWEEN_DEALS and state.rounds_played == state.round
    )
    if not hands_shown:
        for other, cards in enumerate(state.hands):
            if other != seat:
                hidden |= cards & ~state.shown
    return hidden


def event_cards(event: log_pb2.Event) -> int:
    """Every card id an event names."""
    payload = event.hand
    kind = payload.WhichOneof("kind")
    named: list[int] = []
    if kind == "cards_dealt":
        named += payload.cards_dealt.stock
        for dealt in payload.cards_dealt.hands:
            named += dealt.cards
    elif kind == "card_drawn" and payload.card_drawn.HasField("card"):
        named.append(payload.card_drawn.card)
    elif kind == "melds_laid":
        for meld in payload.melds_laid.melds:
            named += meld.cards
    elif kind == "card_laid_off":
        named += [payload.card_laid_off.card, *payload.card_laid_off.meld.cards]
    elif kind == "joker_retrieved":
        got = payload.joker_retrieved
        named += [got.joker, *got.cards, *got.meld.cards]
    elif kind == "card_discarded":
        named.append(payload.card_discarded.card)
    elif kind == "stock_restocked":
        named += payload.stock_restocked.stock
    elif kind == "round_ended":
        for dealt in payload.round_ended.remaining:
            named += dealt.cards
    mask = 0
    for card in named:
        mask |= 1 << card
    return mask


def view_cards(seen: hand_pb2.HandView) -> int:
    """Every card id a view names."""
    named = [*seen.hand, *seen.discard_pile]
    for meld in seen.melds:
        named += meld.cards
    for spec in seen.meld_options:
        named += spec.cards
    for command in seen.legal:
        kind = command.WhichOneof("kind")
        if kind == "lay_melds":
            for spec in command.lay_melds.melds:
                named += spec.cards
        elif kind == "lay_off":
            named.append(command.lay_off.card)
        elif kind == "retrieve_joker":
            named += command.retrieve_joker.cards
        elif kind == "discard":
            named.append(command.discard.card)
    if seen.HasField("must_use"):
        named.append(seen.must_use)
    mask = 0
    for card in named:
        mask |= 1 << card
    return mask


VISIBILITY = Visibility(hidden_mask=hidden_mask, event_cards=event_cards, view_cards=view_cards)
