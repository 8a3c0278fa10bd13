"""The opening threshold, the taken-discard obligation and the end of a turn
(docs/rules/hand.md "Melds", "A turn").

The meld shapes come from :mod:`engine.hand.melds` and the exact search from
:mod:`engine.hand.solver`; this module adds the match's conditions: ``open_min``,
``must_beat_previous``, the ``hand_waives_open_min`` waiver, the last card kept for the
discard, and the card taken from the discard pile that a new meld of this turn must use.

The moves of a turn come in any order. The opening counts every meld the seat lays in the
turn it first lays melds, whatever the number of commands; a taken discard must end in a
new meld of the turn, possibly after a joker retrieval. What keeps this safe is one
invariant, checked by :func:`turn_can_end` after every move that could break it: the seat
can always still end its turn legally (complete its opening or go out with a "hand", meld
the taken card, keep a card to discard).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import combinations
from typing import Any, Generic, TypeVar

from dast.v1 import hand_pb2
from engine.core.cards import PACK_SIZE, CardSet
from engine.core.errors import RuleViolation
from engine.hand.candidates import candidate_melds
from engine.hand.cards import JOKERS_MASK, NATURALS, is_joker, natural_of
from engine.hand.errors import HandCode
from engine.hand.melds import (
    Meld,
    MeldKind,
    joker_faces_of,
    joker_retrievals,
    retrieve_joker,
    validate_meld,
)
from engine.hand.rules import Options
from engine.hand.screens import has_partner, reach
from engine.hand.solver import best_opening, can_go_out, melds_holding
from engine.hand.state import HandState, TableMeld, evolved

MIN_MELD = 3


def reaches_threshold(options: Options, total: int, to_beat: int) -> bool:
    """Whether an opening of ``total`` is enough: ``open_min``, and above ``to_beat`` (the
    round's highest opening before the turn) under ``must_beat_previous``."""
    if total < options.open_min:
        return False
    return not options.must_beat_previous or total > to_beat


def opening_shortfall(
    options: Options, total: int, *, cards_left: int, to_beat: int
) -> HandCode | None:
    """Why an opening of ``total`` leaving ``cards_left`` cards is not enough, or None.

    A lay-down leaving one card is a "hand" in the making: with ``hand_waives_open_min``
    it needs no threshold (rules "End of a round", the waiver covers ``must_beat_previous``
    too).
    """
    if cards_left == 1 and options.hand_waives_open_min:
        return None
    if total < options.open_min:
        return HandCode.OPENING_BELOW_MINIMUM
    if options.must_beat_previous and total <= to_beat:
        return HandCode.OPENING_NOT_ABOVE_PREVIOUS
    return None


def opening_pending(state: HandState) -> bool:
    """Whether the seat to act has laid melds this turn without its opening reaching the
    threshold yet (it may only lay more melds, or go out with a "hand")."""
    return state.opened_this_turn and not reaches_threshold(
        state.options, state.opening_total, state.opening_to_beat
    )


def has_opened(state: HandState, seat: int) -> bool:
    """Whether ``seat`` has opened: it laid melds reaching the threshold, in an earlier
    turn or earlier in this one (lay-offs and joker retrievals need it)."""
    return state.opened[seat] and not (seat == state.turn and opening_pending(state))


def pending_shortfall(state: HandState) -> HandCode:
    """The code for an opening of this turn that cannot reach the threshold."""
    options = state.options
    if options.must_beat_previous and state.opening_to_beat >= options.open_min:
        return HandCode.OPENING_NOT_ABOVE_PREVIOUS
    return HandCode.OPENING_BELOW_MINIMUM


def playable_melds(state: HandState, hand: CardSet) -> list[Meld]:
    """The (maximal) melds ``hand`` can form under the joker limit."""
    options = state.options
    max_jokers = options.max_jokers_per_meld
    # reach's cache is shared by every caller asking about this hand (same arguments).
    alive = reach(hand, max_jokers, options.ace_low_value).alive
    if not alive:
        return []  # every meld holds two alive naturals at least
    # A meld holds alive cards only: the hand's live part lists the same melds, and a seat
    # drawing and discarding dead cards keeps it (see _SolverMemo).
    live = hand & (alive | alive << PACK_SIZE | JOKERS_MASK)

    def listed() -> tuple[Meld, ...]:
        return tuple(candidate_melds(live, max_jokers=max_jokers))

    melds: tuple[Meld, ...] = _CANDIDATES.get((live, max_jokers), listed)
    return list(melds)


def turn_can_end(state: HandState, seat: int) -> bool:
    """Whether ``seat``, in the middle of its turn (after the draw), can still end it
    legally: complete an opening it started (or go out with a "hand"), meld the card it
    took from the discard pile (a joker retrieval first if need be), and discard."""
    hand = state.hands[seat]
    taken = state.must_use
    if opening_pending(state) or (taken is not None and not state.opened[seat]):
        return _can_complete_opening(
            state, hand, taken, state.opening_total, state.opening_to_beat
        )
    if taken is None:
        return hand != 0
    return _can_meld_taken(state, hand, taken)


def can_use_taken_discard(state: HandState, seat: int, card: int) -> bool:
    """Whether ``seat``, about to draw, could take ``card`` from the discard pile and still
    end the turn: meld the card this turn (before opening: in an opening reaching the
    threshold, or a "hand"; once opened: possibly after retrieving a table joker)."""
    hand = state.hands[seat] | (1 << card)
    opened = state.opened[seat]
    retrievals = _retrievals_for(state.melds, hand, card) if opened else []
    if not retrievals and not is_joker(card) and not has_partner(
        state.hands[seat], natural_of(card)
    ):
        return False
    if opened:
        return _can_meld_taken(state, hand, card, retrievals)
    return _can_complete_opening(state, hand, card, 0, state.highest_opening)


def best_legal_opening(state: HandState, seat: int) -> tuple[Meld, ...] | None:
    """The highest lay-down completing ``seat``'s opening now (with the melds already laid
    this turn, and the taken discard if one waits), keeping a card to discard, or None."""
    return _opening_of(
        state, state.hands[seat], state.must_use, state.opening_total, _to_beat(state)
    )


def hand_lay_down(state: HandState, seat: int) -> tuple[Meld, ...] | None:
    """Melds laying ``seat``'s whole hand but one card at once (the "hand" finish, rules
    "End of a round"), when ``seat`` has not opened before this turn and such a lay-down
    is allowed now."""
    if state.opened[seat] and not opening_pending(state):
        return None
    return _hand_of(
        state, state.hands[seat], state.must_use, state.opening_total, _to_beat(state)
    )


def melds_using(state: HandState, hand: CardSet, card: int) -> list[Meld]:
    """Every meld of ``hand`` holding ``card`` that keeps a card to discard, sub-melds of
    the candidates included (the card's own identity substituted for its twin's)."""
    size = hand.bit_count()
    found: dict[Meld, None] = {}
    for candidate in playable_melds(state, hand):
        substituted = _substitute(candidate, card)
        if substituted is None:
            continue
        for meld in _sub_melds_with(substituted, card, state.options.max_jokers_per_meld):
            if len(meld.cards) < size:
                found.setdefault(meld, None)
    return list(found)


def melds_with_taken(state: HandState, hand: CardSet, card: int) -> tuple[Meld, ...] | None:
    """Once opened: some new melds holding the taken ``card`` that keep a card to discard
    (the exact solver's answer), or None."""
    options = state.options
    return _cached_holding(hand, card, options.max_jokers_per_meld, options.ace_low_value) or None


def retrieval_keeps_turn(state: HandState, seat: int, move: hand_pb2.RetrieveJoker) -> bool:
    """Whether the (valid) joker retrieval ``move`` leaves ``seat``'s turn able to end."""
    table_meld = state.melds[move.meld_id]
    meld, joker = retrieve_joker(table_meld.meld, tuple(move.cards))
    hand = state.hands[seat]
    for card in move.cards:
        hand &= ~(1 << card)
    hands = list(state.hands)
    hands[seat] = hand | 1 << joker
    melds = list(state.melds)
    melds[move.meld_id] = TableMeld(table_meld.id, table_meld.owner, meld)
    return turn_can_end(evolved(state, hands=tuple(hands), melds=tuple(melds)), seat)


def _to_beat(state: HandState) -> int:
    return state.opening_to_beat if state.opened_this_turn else state.highest_opening


def _can_complete_opening(
    state: HandState, hand: CardSet, taken: int | None, total: int, to_beat: int
) -> bool:
    """Whether melds of ``hand`` (holding ``taken`` when it waits) added to the ``total``
    laid so far this turn complete an opening, or lay the whole hand but one card."""
    if hand.bit_count() == 1:  # only the discard is left: a "hand" with the waiver
        return taken is None and total > 0 and state.options.hand_waives_open_min
    return (
        _opening_of(state, hand, taken, total, to_beat) is not None
        or _hand_of(state, hand, taken, total, to_beat) is not None
    )


def _can_meld_taken(
    state: HandState, hand: CardSet, card: int,
    retrievals: list[tuple[tuple[int, ...], int]] | None = None,
) -> bool:
    """Once opened: whether new melds of ``hand`` can hold ``card`` and keep a card,
    directly or after retrieving table jokers with natural cards of the hand."""
    if _may_hold(state, hand, card) and melds_with_taken(state, hand, card) is not None:
        return True
    options = _retrievals_for(state.melds, hand, card) if retrievals is None else retrievals
    for count in range(1, len(options) + 1):
        for chosen in combinations(options, count):
            given = [c for cards, _joker in chosen for c in cards]
            if len(set(given)) != len(given):
                continue
            after = hand
            for cards, joker in chosen:
                for given_card in cards:
                    after &= ~(1 << given_card)
                after |= 1 << joker
            if _may_hold(state, after, card) and melds_with_taken(state, after, card) is not None:
                return True
    return False


def _may_hold(state: HandState, hand: CardSet, card: int) -> bool:
    """A cheap necessary condition for a meld of ``hand`` to hold ``card``."""
    if is_joker(card):
        return True
    options = state.options
    alive = reach(hand, options.max_jokers_per_meld, options.ace_low_value).alive
    return bool(alive >> natural_of(card) & 1)


_T = TypeVar("_T")


class TableMemo(Generic[_T]):
    """What ``compute`` reads off a table's melds, remembered by the tuple itself: a
    state's ``melds`` is the same tuple from state to state until a meld changes, while
    ``legal`` asks about it at every decision. Keyed by identity (a tuple of melds hashes
    slowly), each entry holding its tuple so that the identity is never reused while it
    is remembered; bounded like the other caches."""

    __slots__ = ("_compute", "_entries")

    def __init__(self, compute: Callable[[tuple[TableMeld, ...]], _T]) -> None:
        self._compute = compute
        self._entries: dict[int, tuple[tuple[TableMeld, ...], _T]] = {}

    def get(self, melds: tuple[TableMeld, ...]) -> _T:
        entry = self._entries.get(id(melds))
        if entry is not None and entry[0] is melds:
            return entry[1]
        value = self._compute(melds)
        if len(self._entries) >= _TABLES_REMEMBERED:
            self._entries.clear()  # one call: safe should threads share the memo
        self._entries[id(melds)] = (melds, value)
        return value


_TABLES_REMEMBERED = 256
"""Tables a :class:`TableMemo` remembers before starting afresh (one a match in play)."""


def _retrievals_for(
    melds: tuple[TableMeld, ...], hand: CardSet, keep: int
) -> list[tuple[tuple[int, ...], int]]:
    """The joker retrievals ``hand`` allows on the table, one per table joker: the natural
    cards it gives (one physical card per face, never ``keep``) and the joker it takes."""
    found: list[tuple[tuple[int, ...], int]] = []
    for faces, joker in _TABLE_RETRIEVALS.get(melds):
        cards = _cards_for(hand, faces, keep)
        if cards is not None:
            found.append((cards, joker))
    return found


def _table_retrievals(
    melds: tuple[TableMeld, ...],
) -> tuple[tuple[tuple[int, ...], int], ...]:
    """Every joker retrieval of the table, meld after meld: the faces to give, the joker."""
    found: list[tuple[tuple[int, ...], int]] = []
    for table_meld in melds:
        meld = table_meld.meld
        retrievals = _JOKER_RETRIEVALS.get((meld.cards, meld.faces))
        if retrievals is None:
            retrievals = _joker_retrievals(meld)
        found.extend(retrievals)
    return tuple(found)


_TABLE_RETRIEVALS = TableMemo(_table_retrievals)


def _joker_retrievals(meld: Meld) -> tuple[tuple[tuple[int, ...], int], ...]:
    """:func:`~engine.hand.melds.joker_retrievals`, remembered in
    :data:`_JOKER_RETRIEVALS` (asked at every draw of a seat that has opened)."""
    found = () if max(meld.cards) < NATURALS else tuple(joker_retrievals(meld))
    if len(_JOKER_RETRIEVALS) >= 1 << 14:
        _JOKER_RETRIEVALS.clear()
    _JOKER_RETRIEVALS[meld.cards, meld.faces] = found
    return found


_JOKER_RETRIEVALS: dict[
    tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[tuple[int, ...], int], ...]
] = {}
"""Joker retrievals by table meld, keyed by its cards and faces (plain tuples hash and
compare several times faster than the meld record; the faces tell its kind)."""


def _cards_for(hand: CardSet, faces: tuple[int, ...], keep: int) -> tuple[int, ...] | None:
    """One physical card of ``hand`` per face (never ``keep``), or None if one is missing."""
    cards: list[int] = []
    for face in faces:
        held = [c for c in (face, PACK_SIZE + face) if hand >> c & 1 and c != keep]
        if not held:
            return None
        cards.append(held[0])
    return tuple(cards)


def _opening_of(
    state: HandState, hand: CardSet, must_use: int | None, total: int, to_beat: int
) -> tuple[Meld, ...] | None:
    """The best melds of ``hand`` (holding ``must_use``) that bring the turn's opening
    ``total`` to the threshold, keeping a card to discard; None when none does."""
    options = state.options
    seen = reach(hand, options.max_jokers_per_meld, options.ace_low_value)
    if must_use is not None and not is_joker(must_use) and not seen.alive >> (
        natural_of(must_use)
    ) & 1:
        return None
    # The search cuts every plan below the threshold (``needed``), so it is asked first.
    needed = max(options.open_min, to_beat + 1 if options.must_beat_previous else 0) - total
    if reaches_threshold(options, total + seen.opening_bound, to_beat):
        melds = _cached_opening(
            hand, must_use, options.ace_low_value, options.max_jokers_per_meld, needed
        )[1]
        if melds:
            return melds
    # Short of the threshold, the best lay-down still passes when it leaves one card (a
    # "hand", with the waiver): only if the hand can be laid that way at all (one dead
    # card at most, and a plan laying all but one card), is the full search run.
    if not (options.hand_waives_open_min and seen.dead <= 1):
        return None
    if _hand_of(state, hand, must_use, total, to_beat) is None:
        return None
    best, melds = _cached_opening(
        hand, must_use, options.ace_low_value, options.max_jokers_per_meld, 0
    )
    left = hand.bit_count() - sum(len(m.cards) for m in melds)
    shortfall = opening_shortfall(options, total + best, cards_left=left, to_beat=to_beat)
    if melds and shortfall is None:
        return melds
    return None


def _hand_of(
    state: HandState, hand: CardSet, must_use: int | None, total: int, to_beat: int
) -> tuple[Meld, ...] | None:
    # Cheap screen: a hand lays every card but one, so at most one card may fit no meld.
    options = state.options
    seen = reach(hand, options.max_jokers_per_meld, options.ace_low_value)
    if seen.dead > 1 or (
        must_use is not None and not is_joker(must_use)
        and not seen.alive >> natural_of(must_use) & 1
    ):
        return None
    plan = _cached_hand(
        hand,
        must_use,
        max(0, options.open_min - total),
        options.ace_low_value,
        options.max_jokers_per_meld,
        options.hand_waives_open_min,
    )
    if plan is None:
        return None
    shortfall = opening_shortfall(options, total + plan[0], cards_left=1, to_beat=to_beat)
    return None if shortfall is not None else plan[1]


class _SolverMemo:
    """Solver answers by the live part of a hand (bounded: full, it starts afresh).

    The search sets a hand's dead naturals aside first (those no meld can take: their
    rank in too few suits, no card of their suit close by) and sees only the live cards,
    plus how many dead ones there are as far as that counts (one can be the card kept for
    the discard; a "hand" leaves one at most). A dead card makes no other card live, so
    two hands with the same live cards and the same capped number of dead ones get the
    same answer, melds included. A seat that cannot open yet draws and discards mostly
    dead cards, turn after turn: its hand changes while its live part does not, and the
    answer is read rather than searched again.
    """

    __slots__ = ("_answers", "_size")

    def __init__(self, size: int) -> None:
        self._answers: dict[tuple[int, ...], Any] = {}
        self._size = size

    def get(self, key: tuple[int, ...], solve: Callable[[], Any]) -> Any:
        answers = self._answers
        if key in answers:
            return answers[key]
        answer = solve()
        if len(answers) >= self._size:
            answers.clear()  # one call: safe should threads share the memo
        answers[key] = answer
        return answer


def _live_part(hand: CardSet, max_jokers: int, ace_low_value: int) -> tuple[int, int]:
    """The hand's live cards (jokers included) and how many dead naturals it holds (see
    :class:`_SolverMemo`; ``ace_low_value`` only shares :func:`reach`'s cache)."""
    seen = reach(hand, max_jokers, ace_low_value)
    live = hand & (seen.alive | seen.alive << PACK_SIZE | JOKERS_MASK)
    return live, seen.dead


_HANDS = _SolverMemo(4096)
_CANDIDATES = _SolverMemo(4096)
_OPENINGS = _SolverMemo(4096)
_HOLDINGS = _SolverMemo(4096)
_NO_CARD = -1


def _cached_hand(
    hand: CardSet,
    must_use: int | None,
    open_min: int,
    ace_low_value: int,
    max_jokers: int,
    waived: bool,
) -> tuple[int, tuple[Meld, ...]] | None:
    def solve() -> tuple[int, tuple[Meld, ...]] | None:
        plan = can_go_out(
            hand,
            has_opened=False,
            open_min=open_min,
            ace_low_value=ace_low_value,
            max_jokers=max_jokers,
            hand_finish_allowed=True,
            hand_waives_open_min=waived,
            must_use=must_use,
        )
        if plan is None or not plan.is_hand:
            return None
        return plan.total, plan.melds

    live, dead = _live_part(hand, max_jokers, ace_low_value)
    key = (live, min(dead, 2), _NO_CARD if must_use is None else must_use, open_min,
           ace_low_value, max_jokers, waived)  # going out leaves one card: 2 dead fail
    answer: tuple[int, tuple[Meld, ...]] | None = _HANDS.get(key, solve)
    return answer


def _cached_opening(
    hand: CardSet, must_use: int | None, ace_low_value: int, max_jokers: int, floor: int
) -> tuple[int, tuple[Meld, ...]]:
    # legal, view, decide and the bots ask about the same hand in a row: solve it once.
    def solve() -> tuple[int, tuple[Meld, ...]]:
        opening = best_opening(
            hand, ace_low_value=ace_low_value, max_jokers=max_jokers, keep=1,
            must_use=must_use, floor=floor,
        )
        return opening.total, opening.melds

    live, dead = _live_part(hand, max_jokers, ace_low_value)
    key = (live, min(dead, 1), _NO_CARD if must_use is None else must_use, ace_low_value,
           max_jokers, floor)  # one card is kept: a dead one will do
    answer: tuple[int, tuple[Meld, ...]] = _OPENINGS.get(key, solve)
    return answer


def _cached_holding(
    hand: CardSet, card: int, max_jokers: int, ace_low_value: int
) -> tuple[Meld, ...]:
    def solve() -> tuple[Meld, ...]:
        return melds_holding(hand, card, max_jokers=max_jokers, keep=1)

    live, dead = _live_part(hand, max_jokers, ace_low_value)
    answer: tuple[Meld, ...] = _HOLDINGS.get((live, min(dead, 1), card, max_jokers), solve)
    return answer


def _substitute(meld: Meld, card: int) -> Meld | None:
    """``meld`` with ``card`` in place of the card of the same face (or joker), if any."""
    if card in meld.cards:
        return meld
    for index, other in enumerate(meld.cards):
        same = is_joker(other) if is_joker(card) else (
            not is_joker(other) and natural_of(other) == natural_of(card)
        )
        if same:
            cards = (*meld.cards[:index], card, *meld.cards[index + 1 :])
            return replace(meld, cards=cards)
    return None


def _sub_melds_with(meld: Meld, card: int, max_jokers: int) -> Iterator[Meld]:
    """Every valid meld made of ``meld``'s cards that holds ``card``: contiguous stretches
    of a run, subsets of a set."""
    faces = joker_faces_of(meld)
    at = meld.cards.index(card)
    count = len(meld.cards)
    if meld.kind is MeldKind.RUN:
        pieces = [
            meld.cards[start:end]
            for start in range(at + 1)
            for end in range(max(at + 1, start + MIN_MELD), count + 1)
        ]
    else:
        others = [c for c in meld.cards if c != card]
        pieces = [
            (card, *chosen)
            for size in range(MIN_MELD - 1, len(others) + 1)
            for chosen in combinations(others, size)
        ]
    for piece in pieces:
        try:
            yield validate_meld(piece, faces, max_jokers=max_jokers)
        except RuleViolation:
            continue
