"""The moves of a turn (docs/rules/hand.md "A turn", "Melds", "End of a round").

Each move checks its own rule and emits its event into the command's
:class:`~engine.hand.batch.Batch`; whose turn and which phase it is were checked by
:func:`~engine.hand.decide.decide`. Meld shapes are checked by :mod:`engine.hand.melds`
only (one rule, one place); this module adds what depends on the match: whose cards,
the opening threshold, the obligation of a taken discard, the last card.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from dast.v1 import hand_pb2
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.hand.batch import Batch, after_discard
from engine.hand.cards import DECK_SIZE, hand_card_name, is_joker
from engine.hand.codec import (
    card_discarded_event,
    card_drawn_event,
    hand_event,
    table_meld_to_proto,
)
from engine.hand.errors import HandCode
from engine.hand.melds import Meld, lay_off, meld_value, retrieve_joker, validate_meld
from engine.hand.opening import (
    can_use_taken_discard,
    has_opened,
    opening_pending,
    pending_shortfall,
    turn_can_end,
)
from engine.hand.state import HandState, TableMeld


def draw_from_stock(batch: Batch, seat: int, move: hand_pb2.DrawFromStock, where: str) -> None:
    """Draw the top card of the stock (never empty: it is restocked at the end of a turn)."""
    state = batch.current
    batch.emit(
        card_drawn_event(seat, state.stock[0])
    )


def take_discard(batch: Batch, seat: int, move: hand_pb2.TakeDiscard, where: str) -> None:
    """Take the top of the discard pile, which a new meld of this turn must then use."""
    state = batch.current
    if not state.discard:
        raise RuleViolation(HandCode.DISCARD_PILE_EMPTY, f"the discard pile is empty {where}")
    card = state.discard[-1]
    # Taking obliges the player to meld the card this turn; a card that no meld of
    # this turn could use (a joker retrieval first included) would leave the turn without
    # a legal end, so it cannot be taken.
    if not can_use_taken_discard(state, seat, card):
        raise RuleViolation(
            HandCode.TAKEN_DISCARD_UNUSABLE,
            f"{hand_card_name(card)} fits no meld you could lay this turn {where}",
        )
    batch.emit(
        card_drawn_event(seat, card, from_discard=True)
    )


def lay_melds(batch: Batch, seat: int, move: hand_pb2.LayMelds, where: str) -> None:
    """Lay one or more new melds. Every lay-down of the turn in which a seat first lays
    melds belongs to its opening, and the threshold counts them all (rules "Opening"); a
    lay-down that leaves the opening unable to reach it, or the taken discard unable to
    join a new meld, is refused."""
    state = batch.current
    if not move.melds:
        raise InvalidCommand(Code.MALFORMED_COMMAND, f"lay_melds names no meld {where}")
    laid: list[int] = []
    melds: list[Meld] = []
    for spec in move.melds:
        faces = _joker_faces(spec, where)
        _check_cards(state, seat, spec.cards, laid, where)
        laid.extend(spec.cards)
        melds.append(
            validate_meld(
                tuple(spec.cards), faces, max_jokers=state.options.max_jokers_per_meld
            )
        )
    _check_not_last_card(state, seat, len(laid), where)
    total = sum(meld_value(m, ace_low_value=state.options.ace_low_value) for m in melds)
    opening = not state.opened[seat] or state.opened_this_turn
    first_id = len(state.melds)
    batch.emit(
        hand_event(
            melds_laid=hand_pb2.MeldsLaid(
                seat=seat,
                melds=[
                    table_meld_to_proto(TableMeld(first_id + index, seat, meld))
                    for index, meld in enumerate(melds)
                ],
                opening=opening,
                total=total,
            )
        )
    )
    after = batch.current
    if turn_can_end(after, seat):
        return
    if opening_pending(after):
        raise RuleViolation(
            pending_shortfall(after),
            f"an opening of {after.opening_total} that the cards left cannot complete {where}",
        )
    taken = hand_card_name(after.must_use) if after.must_use is not None else "card"
    raise RuleViolation(
        HandCode.OPENING_MUST_USE_TAKEN_DISCARD if opening else HandCode.MUST_USE_TAKEN_DISCARD,
        f"after this lay-down no new meld could hold the taken {taken} {where}",
    )


def lay_off_card(batch: Batch, seat: int, move: hand_pb2.LayOff, where: str) -> None:
    """Lay one card off onto a table meld (only after opening: rules "Opening")."""
    state = batch.current
    _check_opened(state, seat, "lay off", where)
    _check_cards(state, seat, (move.card,), [], where)
    _check_not_last_card(state, seat, 1, where)
    table_meld = _table_meld(state, move.meld_id, where)
    if is_joker(move.card) != move.HasField("joker_face"):
        raise InvalidCommand(
            Code.MALFORMED_COMMAND, f"a joker, and only a joker, names its face {where}"
        )
    joker_face = move.joker_face if move.HasField("joker_face") else None
    meld = lay_off(
        table_meld.meld,
        move.card,
        joker_face,
        max_jokers=state.options.max_jokers_per_meld,
    )
    batch.emit(
        hand_event(
            card_laid_off=hand_pb2.CardLaidOff(
                seat=seat,
                card=move.card,
                meld=table_meld_to_proto(TableMeld(table_meld.id, table_meld.owner, meld)),
            )
        )
    )
    _check_taken_still_usable(batch, seat, where)


def retrieve(batch: Batch, seat: int, move: hand_pb2.RetrieveJoker, where: str) -> None:
    """Put the natural card(s) a table joker stands for in its place and take the joker."""
    state = batch.current
    _check_opened(state, seat, "retrieve a joker", where)
    _check_cards(state, seat, move.cards, [], where)
    table_meld = _table_meld(state, move.meld_id, where)
    meld, joker = retrieve_joker(table_meld.meld, tuple(move.cards))
    batch.emit(
        hand_event(
            joker_retrieved=hand_pb2.JokerRetrieved(
                seat=seat,
                joker=joker,
                cards=move.cards,
                meld=table_meld_to_proto(TableMeld(table_meld.id, table_meld.owner, meld)),
            )
        )
    )
    _check_taken_still_usable(batch, seat, where)


def discard(batch: Batch, seat: int, move: hand_pb2.Discard, where: str) -> None:
    """Discard one card, ending the turn; discarding the last card goes out."""
    state = batch.current
    _check_cards(state, seat, (move.card,), [], where)
    _check_taken_discard_used(state, where)
    if opening_pending(state) and not (
        state.hands[seat].bit_count() == 1 and state.options.hand_waives_open_min
    ):
        raise RuleViolation(
            pending_shortfall(state),
            f"complete the opening ({state.opening_total} so far) before discarding {where}",
        )
    batch.emit(card_discarded_event(seat, move.card))
    after_discard(batch, seat, state, move.card)


MOVES: Final[dict[str, Callable[[Batch, int, Any, str], None]]] = {
    "draw_from_stock": draw_from_stock,
    "take_discard": take_discard,
    "lay_melds": lay_melds,
    "lay_off": lay_off_card,
    "retrieve_joker": retrieve,
    "discard": discard,
}
"""Each command's move by the name of its ``HandCommand`` field."""


def _joker_faces(spec: hand_pb2.MeldSpec, where: str) -> dict[int, int]:
    faces: dict[int, int] = {}
    for joker in spec.jokers:
        if not is_joker(joker.joker) or joker.joker not in spec.cards or joker.face >= 52:
            raise InvalidCommand(
                Code.MALFORMED_COMMAND,
                f"joker faces must name a joker of the meld and a face 0..51 {where}",
            )
        faces[joker.joker] = joker.face
    if any(is_joker(card) and card not in faces for card in spec.cards if card < DECK_SIZE):
        raise InvalidCommand(
            Code.MALFORMED_COMMAND, f"every joker of a meld names the card it stands for {where}"
        )
    return faces


def _check_cards(
    state: HandState, seat: int, cards: Iterable[int], taken: list[int], where: str
) -> None:
    seen = set(taken)
    for card in cards:
        if card >= DECK_SIZE:
            raise InvalidCommand(Code.INVALID_CARD, f"no card {card} {where}")
        if card in seen:
            raise InvalidCommand(
                Code.MALFORMED_COMMAND, f"{hand_card_name(card)} is named twice {where}"
            )
        seen.add(card)
        if not state.hands[seat] >> card & 1:
            raise RuleViolation(
                HandCode.CARD_NOT_IN_HAND, f"{hand_card_name(card)} is not in your hand {where}"
            )


def _check_not_last_card(state: HandState, seat: int, laying: int, where: str) -> None:
    # rules "A turn" 3: a player always ends the turn by discarding, so never melds the last card.
    if state.hands[seat].bit_count() - laying < 1:
        raise RuleViolation(
            HandCode.CANNOT_MELD_LAST_CARD, f"keep a card to discard {where}"
        )


def _check_taken_discard_used(state: HandState, where: str) -> None:
    # rules "A turn" 1: taking the discard obliges a new meld using it this turn.
    if state.must_use is not None:
        raise RuleViolation(
            HandCode.MUST_USE_TAKEN_DISCARD,
            f"first lay a meld using the taken {hand_card_name(state.must_use)} {where}",
        )


def _check_taken_still_usable(batch: Batch, seat: int, where: str) -> None:
    # The moves of a turn come in any order, but none may strand the taken discard.
    after = batch.current
    if after.must_use is not None and not turn_can_end(after, seat):
        raise RuleViolation(
            HandCode.MUST_USE_TAKEN_DISCARD,
            f"after this move no new meld could hold the taken "
            f"{hand_card_name(after.must_use)} {where}",
        )


def _check_opened(state: HandState, seat: int, what: str, where: str) -> None:
    # rules "Opening": lay-offs and retrievals come once the opening reached the threshold.
    if not has_opened(state, seat):
        raise RuleViolation(HandCode.NOT_OPENED, f"open before you {what} {where}")


def _table_meld(state: HandState, meld_id: int, where: str) -> TableMeld:
    if meld_id >= len(state.melds):
        raise RuleViolation(HandCode.NO_SUCH_MELD, f"no meld {meld_id} on the table {where}")
    return state.melds[meld_id]
