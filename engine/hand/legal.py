"""A seat's legal commands, listed without enumerating meld combinations.

Order (stable, documented for clients and tests):

1. ``draw_from_stock``, then ``take_discard`` (when the top discard is usable);
2. ``lay_melds``: before opening (or while the opening laid this turn is short of the
   threshold), the solver's best lay-down completing the opening, then the "hand"
   lay-down (all cards but one) when there is one; once opened, one command per meld the
   hand can form (in the order of :func:`~engine.hand.melds.candidate_melds`). While a
   card taken from the discard pile waits, only lay-downs using it are listed. Any other
   combination the player spells is checked by ``decide`` when chosen (the view's
   ``meld_options`` lists the melds to combine);
3. ``lay_off``: by table meld id, then card id; a joker once per face it may stand for
   (not listed while a taken discard waits, though ``decide`` accepts a lay-off that
   leaves the card still usable);
4. ``retrieve_joker``: by table meld id, one command per choice of physical cards (while
   a taken discard waits, those after which it can still join a new meld);
5. ``discard``: by card id, once nothing keeps the turn from ending.

Every listed command is accepted by ``decide`` (a property test checks it).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

from dast.v1 import hand_pb2, log_pb2
from engine.core.cards import PACK_SIZE, RANKS_PER_SUIT, SUITS, iter_cards
from engine.core.errors import RuleViolation
from engine.hand.cards import DECK_SIZE, JOKERS, JOKERS_MASK, is_joker
from engine.hand.codec import hand_command, meld_spec_of
from engine.hand.melds import Meld, MeldKind, extension_faces, retrieve_joker
from engine.hand.opening import (
    TableMemo,
    best_legal_opening,
    can_use_taken_discard,
    hand_lay_down,
    has_opened,
    melds_using,
    melds_with_taken,
    opening_pending,
    playable_melds,
    retrieval_keeps_turn,
)
from engine.hand.rules import MAX_PLAYERS
from engine.hand.state import HandState, Phase, TableMeld

_BETWEEN_DEALS, _FIRST_DISCARD, _DRAW, _MATCH_OVER = (
    Phase.BETWEEN_DEALS, Phase.FIRST_DISCARD, Phase.DRAW, Phase.MATCH_OVER
)  # read once: an enum member lookup is not free, and legal runs before every command

_RUN_END_POSITIONS = 13


def legal(state: HandState, seat: int) -> list[log_pb2.Command]:
    """The commands ``seat`` may send now, in the order of the module docs (empty when it
    is not to act)."""
    phase = state.phase
    if seat != state.turn or phase is _BETWEEN_DEALS or phase is _MATCH_OVER:
        return []
    if phase is _FIRST_DISCARD:
        return _discards(state, seat)
    if phase is _DRAW:
        parse = log_pb2.Command.FromString
        draw, take = _DRAWS[seat]
        commands = [parse(draw)]
        if state.discard and can_use_taken_discard(state, seat, state.discard[-1]):
            commands.append(parse(take))
        return commands
    pending = opening_pending(state)
    if pending and state.hands[seat].bit_count() == 1:
        return _discards(state, seat)  # a "hand" in the making: discard the last card
    commands = list(_lay_melds(state, seat))
    if state.must_use is not None:
        if has_opened(state, seat):
            commands.extend(
                command for command in _retrievals(state, seat)
                if retrieval_keeps_turn(state, seat, command.hand.retrieve_joker)
            )
        return commands  # the turn cannot end before the taken discard is melded
    if pending:
        return commands  # the opening must reach the threshold before anything else
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


def _discards(state: HandState, seat: int) -> list[log_pb2.Command]:
    encoded = _DISCARDS[seat]
    parse = log_pb2.Command.FromString
    commands = []
    hand = state.hands[seat]
    while hand:  # the cards in ascending order (iter_cards, inline: a turn lists 15)
        low = hand & -hand
        commands.append(parse(encoded[low.bit_length() - 1]))
        hand ^= low
    return commands


def _encoded_discards(seat: int) -> tuple[bytes, ...]:
    commands = []
    for card in range(DECK_SIZE):
        command = log_pb2.Command(seat=seat)
        command.hand.discard.card = card
        commands.append(command.SerializeToString(deterministic=True))
    return tuple(commands)


_DISCARDS = tuple(_encoded_discards(seat) for seat in range(MAX_PLAYERS))
"""Every seat's discard commands, encoded once: a seat's turn lists 14 or 15 of them, and
parsing a few bytes builds a fresh message faster than setting its nested fields."""
_DRAWS = tuple(
    (
        hand_command(seat, draw_from_stock=hand_pb2.DrawFromStock()).SerializeToString(
            deterministic=True
        ),
        hand_command(seat, take_discard=hand_pb2.TakeDiscard()).SerializeToString(
            deterministic=True
        ),
    )
    for seat in range(MAX_PLAYERS)
)
"""Every seat's ``draw_from_stock`` and ``take_discard`` commands, encoded once (every
other decision is a draw: parsed like :data:`_DISCARDS`)."""


def _lay_melds(state: HandState, seat: int) -> Iterator[log_pb2.Command]:
    hand = state.hands[seat]
    choices: list[tuple[Meld, ...]] = []
    if not has_opened(state, seat):
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
    spots, any_wanted = _TABLE_SPOTS.get(state.melds)
    naturals = hand & any_wanted
    if not naturals and not hand & JOKERS_MASK:
        return  # no card of the hand extends a table meld
    max_jokers = state.options.max_jokers_per_meld
    jokers = [card for card in JOKERS if hand >> card & 1]
    for meld_id, extensions, wanted, jokers_in_meld in spots:
        if naturals & wanted:
            for card in iter_cards(naturals & wanted):
                yield _lay_off_command(seat, meld_id, card, None)
        if jokers and jokers_in_meld < max_jokers:
            for joker in jokers:
                for face in extensions:
                    yield _lay_off_command(seat, meld_id, joker, face)


def _table_spots(
    melds: tuple[TableMeld, ...],
) -> tuple[tuple[tuple[int, tuple[int, ...], int, int], ...], int]:
    """The table melds that take a lay-off, in order: id, extension faces, the natural
    cards of those faces (a mask of both packs), and the jokers the meld holds; and every
    natural card that some meld takes."""
    found = []
    any_wanted = 0
    for table_meld in melds:
        meld = table_meld.meld
        spots = _SPOTS.get((meld.cards, meld.faces))
        if spots is None:
            spots = _lay_off_spots(meld)
        extensions, wanted, jokers_in_meld = spots
        if extensions:
            cards = wanted | wanted << PACK_SIZE
            found.append((table_meld.id, extensions, cards, jokers_in_meld))
            any_wanted |= cards
    return tuple(found), any_wanted


_TABLE_SPOTS = TableMemo(_table_spots)


def _lay_off_spots(meld: Meld) -> tuple[tuple[int, ...], int, int]:
    """What a lay-off onto ``meld`` may be: its extension faces, the same as a 52-bit
    mask, and the jokers it holds; remembered in :data:`_SPOTS`."""
    extensions = extension_faces(meld)
    spots = extensions, sum(1 << face for face in extensions), sum(map(is_joker, meld.cards))
    if len(_SPOTS) >= _MELD_CACHE_SIZE:
        _SPOTS.clear()
    _SPOTS[meld.cards, meld.faces] = spots
    return spots


_MELD_CACHE_SIZE = 1 << 14
"""Table melds remembered (by :data:`_SPOTS` and :data:`_RETRIEVALS`) before starting afresh."""
_SPOTS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], int, int]] = {}
"""Lay-off spots by meld (its cards and faces, which tell its kind too): a table meld is
asked about turn after turn while it stays unchanged. Keyed by plain tuples, which hash
and compare several times faster than the meld record itself."""


def _lay_off_command(seat: int, meld_id: int, card: int, face: int | None) -> log_pb2.Command:
    command = log_pb2.Command(seat=seat)
    move = command.hand.lay_off
    move.meld_id = meld_id
    move.card = card
    if face is not None:
        move.joker_face = face
    return command


def _retrievals(state: HandState, seat: int) -> Iterator[log_pb2.Command]:
    hand = state.hands[seat]
    retrievable, any_face = _TABLE_JOKERS.get(state.melds)
    if not hand & any_face:
        return  # the hand holds none of the faces the table's jokers stand for
    for table_meld, wanted in retrievable:
        for faces, held in wanted:
            if not all(hand & cards for cards in held):
                continue  # a face missing: no choice of cards
            choices = [
                [c for c in (face, PACK_SIZE + face) if hand >> c & 1] for face in faces
            ]
            for cards in product(*choices):
                try:
                    retrieve_joker(table_meld.meld, cards)
                except RuleViolation:
                    continue
                yield hand_command(
                    seat,
                    retrieve_joker=hand_pb2.RetrieveJoker(meld_id=table_meld.id, cards=cards),
                )


_Retrievable = tuple[TableMeld, tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]]


def _table_jokers(melds: tuple[TableMeld, ...]) -> tuple[tuple[_Retrievable, ...], int]:
    """The table melds holding a joker to retrieve, in order, with
    :func:`_faces_to_retrieve` (each face with the mask of its two cards); and the cards
    of every such face."""
    found = []
    any_face = 0
    for table_meld in melds:
        meld = table_meld.meld
        wanted = _RETRIEVALS.get((meld.cards, meld.faces))
        if wanted is None:
            wanted = _retrieval_faces(meld)
        if wanted:
            groups = []
            for faces in wanted:
                held = tuple(1 << face | 1 << PACK_SIZE + face for face in faces)
                groups.append((faces, held))
                for cards in held:
                    any_face |= cards
            found.append((table_meld, tuple(groups)))
    return tuple(found), any_face


_TABLE_JOKERS = TableMemo(_table_jokers)


def _retrieval_faces(meld: Meld) -> tuple[tuple[int, ...], ...]:
    """:func:`_faces_to_retrieve`, remembered in :data:`_RETRIEVALS`."""
    wanted = _faces_to_retrieve(meld)
    if len(_RETRIEVALS) >= _MELD_CACHE_SIZE:
        _RETRIEVALS.clear()
    _RETRIEVALS[meld.cards, meld.faces] = wanted
    return wanted


def _faces_to_retrieve(meld: Meld) -> tuple[tuple[int, ...], ...]:
    """For each joker of ``meld`` a retrieval could give back, the faces to give in its
    place: a run's joker its face, a set's every missing suit."""
    if not any(card in JOKERS for card in meld.cards):
        return ()
    if meld.kind is MeldKind.RUN:
        return tuple(
            (face,) for card, face in zip(meld.cards, meld.faces, strict=True) if is_joker(card)
        )
    rank = meld.faces[0] % RANKS_PER_SUIT
    natural_faces = _natural_faces(meld)
    return (
        tuple(
            suit * RANKS_PER_SUIT + rank
            for suit in range(SUITS)
            if suit * RANKS_PER_SUIT + rank not in natural_faces
        ),
    )


_RETRIEVALS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], ...]] = {}
"""Joker retrieval faces by meld, keyed like :data:`_SPOTS`."""


def _natural_faces(meld: Meld) -> set[int]:
    return {face for card, face in zip(meld.cards, meld.faces, strict=True) if not is_joker(card)}
