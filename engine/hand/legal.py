"""A seat's legal commands, listed without enumerating meld combinations.

Order (stable, documented for clients and tests):

1. ``draw_from_stock``, then ``take_discard`` (when the top discard is usable);
2. ``lay_melds``: before opening, the solver's best opening when it reaches the
   threshold, then the "hand" lay-down (all cards but one) when there is one; once opened,
   one command per meld the hand can form (in the order of
   :func:`~engine.hand.melds.candidate_melds`). While a card taken from the discard pile
   waits, only lay-downs using it are listed (and nothing else is legal). Any other
   combination the player spells is checked by ``decide`` when chosen (the view's
   ``meld_options`` lists the melds to combine);
3. ``lay_off``: by table meld id, then card id; a joker once per face it may stand for;
4. ``retrieve_joker``: by table meld id, one command per choice of physical cards;
5. ``discard``: by card id.

Every listed command is accepted by ``decide`` (a property test checks it).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

from dast.v1 import hand_pb2, log_pb2
from engine.core.cards import PACK_SIZE, RANKS_PER_SUIT, SUITS, iter_cards
from engine.core.errors import RuleViolation
from engine.hand.cards import JOKERS, is_joker, natural_of
from engine.hand.codec import hand_command, meld_spec_of
from engine.hand.melds import Meld, MeldKind, lay_off, retrieve_joker
from engine.hand.opening import (
    best_legal_opening,
    can_use_taken_discard,
    hand_lay_down,
    melds_using,
    melds_with_taken,
    playable_melds,
)
from engine.hand.state import HandState, Phase

_RUN_END_POSITIONS = 13


def legal(state: HandState, seat: int) -> list[log_pb2.Command]:
    """The commands ``seat`` may send now, in the order of the module docs (empty when it
    is not to act)."""
    if seat != state.turn or state.phase in (Phase.BETWEEN_DEALS, Phase.MATCH_OVER):
        return []
    if state.phase is Phase.FIRST_DISCARD:
        return list(_discards(state, seat))
    if state.phase is Phase.DRAW:
        commands = [hand_command(seat, draw_from_stock=hand_pb2.DrawFromStock())]
        if state.discard and can_use_taken_discard(state, seat, state.discard[-1]):
            commands.append(hand_command(seat, take_discard=hand_pb2.TakeDiscard()))
        return commands
    if state.laying_hand:
        return list(_discards(state, seat))
    commands = list(_lay_melds(state, seat))
    if state.must_use is not None:
        return commands  # the taken discard's meld comes first (engine.hand.opening)
    if state.opened[seat]:
        commands.extend(_lay_offs(state, seat))
        commands.extend(_retrievals(state, seat))
    commands.extend(_discards(state, seat))
    return commands


def meld_options(state: HandState, seat: int) -> list[Meld]:
    """The melds ``seat``'s hand can form now (the compact description of ``lay_melds``)."""
    if not state.hands:
        return []
    return playable_melds(state, state.hands[seat])


def _discards(state: HandState, seat: int) -> Iterator[log_pb2.Command]:
    for card in iter_cards(state.hands[seat]):
        yield hand_command(seat, discard=hand_pb2.Discard(card=card))


def _lay_melds(state: HandState, seat: int) -> Iterator[log_pb2.Command]:
    hand = state.hands[seat]
    choices: list[tuple[Meld, ...]] = []
    if not state.opened[seat]:
        openings = (best_legal_opening(state, seat), hand_lay_down(state, seat))
        choices.extend(m for m in openings if m)
    elif state.must_use is not None:
        choices.extend((m,) for m in melds_using(state, hand, state.must_use))
        if not choices:
            choices.extend(m for m in (melds_with_taken(state, hand, state.must_use),) if m)
    else:
        size = hand.bit_count()
        choices.extend((m,) for m in playable_melds(state, hand) if len(m.cards) < size)
    seen: set[bytes] = set()
    for melds in choices:
        command = hand_command(
            seat, lay_melds=hand_pb2.LayMelds(melds=[meld_spec_of(m) for m in melds])
        )
        key = command.SerializeToString(deterministic=True)
        if key not in seen:
            seen.add(key)
            yield command


def _lay_offs(state: HandState, seat: int) -> Iterator[log_pb2.Command]:
    hand = state.hands[seat]
    if hand.bit_count() < 2:
        return
    max_jokers = state.options.max_jokers_per_meld
    for table_meld in state.melds:
        for card in iter_cards(hand):
            if not is_joker(card) and not _may_extend(table_meld.meld, natural_of(card)):
                continue
            faces: tuple[int | None, ...] = (
                _joker_faces_for(table_meld.meld) if is_joker(card) else (None,)
            )
            for face in faces:
                try:
                    lay_off(table_meld.meld, card, face, max_jokers=max_jokers)
                except RuleViolation:
                    continue
                move = hand_pb2.LayOff(meld_id=table_meld.id, card=card)
                if face is not None:
                    move.joker_face = face
                yield hand_command(seat, lay_off=move)


def _may_extend(meld: Meld, face: int) -> bool:
    """A cheap necessary condition for a lay-off (``lay_off`` decides): a set's rank in a
    suit it lacks, or a run's suit at a rank it lacks."""
    if face in meld.faces:
        return False
    if meld.kind is MeldKind.SET:
        return face % RANKS_PER_SUIT == meld.faces[0] % RANKS_PER_SUIT
    return face // RANKS_PER_SUIT == meld.faces[0] // RANKS_PER_SUIT


def _joker_faces_for(meld: Meld) -> tuple[int, ...]:
    """The faces a joker laid off on ``meld`` might stand for (checked by ``lay_off``)."""
    if meld.kind is MeldKind.SET:
        rank = meld.faces[0] % RANKS_PER_SUIT
        return tuple(
            suit * RANKS_PER_SUIT + rank
            for suit in range(SUITS)
            if suit * RANKS_PER_SUIT + rank not in meld.faces
        )
    suit = meld.faces[0] // RANKS_PER_SUIT
    ranks = {face % RANKS_PER_SUIT for face in meld.faces}
    below = (meld.faces[0] % RANKS_PER_SUIT - 1) % RANKS_PER_SUIT
    above = (meld.faces[-1] % RANKS_PER_SUIT + 1) % RANKS_PER_SUIT
    return tuple(
        sorted({suit * RANKS_PER_SUIT + rank for rank in (below, above) if rank not in ranks})
    )


def _retrievals(state: HandState, seat: int) -> Iterator[log_pb2.Command]:
    hand = state.hands[seat]
    for table_meld in state.melds:
        meld = table_meld.meld
        if not any(card in JOKERS for card in meld.cards):
            continue
        if meld.kind is MeldKind.RUN:
            wanted: list[tuple[int, ...]] = [
                (face,) for card, face in zip(meld.cards, meld.faces, strict=True)
                if is_joker(card)
            ]
        else:
            rank = meld.faces[0] % RANKS_PER_SUIT
            wanted = [
                tuple(
                    suit * RANKS_PER_SUIT + rank
                    for suit in range(SUITS)
                    if suit * RANKS_PER_SUIT + rank not in _natural_faces(meld)
                )
            ]
        for faces in wanted:
            choices = [
                [c for c in (face, PACK_SIZE + face) if hand >> c & 1] for face in faces
            ]
            for cards in product(*choices):
                try:
                    retrieve_joker(meld, cards)
                except RuleViolation:
                    continue
                yield hand_command(
                    seat,
                    retrieve_joker=hand_pb2.RetrieveJoker(meld_id=table_meld.id, cards=cards),
                )


def _natural_faces(meld: Meld) -> set[int]:
    return {face for card, face in zip(meld.cards, meld.faces, strict=True) if not is_joker(card)}
