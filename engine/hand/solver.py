"""The exact meld solver of Hand: best opening, going out this turn, least penalty.

docs/rules/hand.md "What the bot and the client need from the engine": the best opening total
a hand can make, whether the hand can go out this turn (lay-offs on table melds included),
and the minimum penalty left in hand. Greedy meld choice is wrong (6♠7♠8♠ + 6♣7♣8♣ + 8♦:
taking 8♠8♣8♦ strands the rest), so every answer comes from an exhaustive search with
memoisation (:mod:`engine.hand._search`), never capped by a node limit. Cards that can
join no meld at all are set aside first, which makes most random hands trivial.

:func:`can_go_out` and :func:`min_penalty` consider retrieving table jokers
(docs/rules/hand.md "Joker retrieval") as the engine allows it: a seat that has opened
may retrieve at once; one that has not only once the melds of its own cards laid this
turn reach the threshold, so a retrieved joker counts in no opening (the search lays a
new meld holding one as its core with the opening and the rest after the retrieval:
:mod:`engine.hand._cores`). The table holds two jokers at most, so each possible set of
retrievals is searched on its own. :func:`min_penalty` respects the opening threshold of
a seat that has not opened. ``must_beat_previous`` is the caller's ``open_min``.

>>> from engine.hand.cards import parse_hand_cards
>>> best_opening(parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 2♥")).total
42
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

from engine.core.cards import PACK_SIZE, iter_cards
from engine.hand._search import (
    ACE,
    CORE,
    FACES,
    HIGH,
    LAY,
    MELD,
    NEG,
    RANKS,
    Choice,
    Search,
    Table,
    TableRun,
    TableSet,
    face_at,
)
from engine.hand.cards import (
    DEFAULT_JOKER_PENALTY,
    NATURALS,
    HandCard,
    is_joker,
    natural_of,
    penalty_value,
)
from engine.hand.melds import (
    Meld,
    MeldKind,
    is_ace_low,
    joker_retrievals,
    lay_off,
    meld_value,
    retrieve_joker,
    run_position,
    validate_meld,
)
from engine.hand.screens import alive_faces

__all__ = ["GoOutPlan", "LayOff", "Opening", "Penalty", "Retrieval", "best_opening",
           "can_go_out", "melds_holding", "min_penalty"]


@dataclass(frozen=True, slots=True)
class Opening:
    """The best opening: its total and the melds reaching it (empty when none)."""

    total: int
    melds: tuple[Meld, ...]


@dataclass(frozen=True, slots=True)
class LayOff:
    """One card laid off onto ``table_melds[meld_index]`` (``joker_face`` for a joker)."""

    meld_index: int
    card: HandCard
    joker_face: int | None = None


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Natural ``cards`` put in place of ``joker`` in ``table_melds[meld_index]``."""

    meld_index: int
    cards: tuple[HandCard, ...]
    joker: HandCard


@dataclass(frozen=True, slots=True)
class GoOutPlan:
    """How to go out this turn, in this order: lay the first ``opening_melds`` of
    ``melds``, make the ``retrievals``, lay the other ``melds``, then the ``lay_offs``
    (each valid by :func:`~engine.hand.melds.lay_off` on the table as changed by the ones
    before; a ``meld_index`` from ``len(table_melds)`` on names ``melds[meld_index -
    len(table_melds)]``, as the engine numbers new melds), then discard ``discard``.

    A seat that has opened makes its retrievals first (``opening_melds`` 0); one that
    opens this turn lays its opening first, new melds of its own cards reaching
    ``open_min``, since a retrieval needs the opening (docs/rules/hand.md "Opening"). A
    retrieved joker then joins a later meld, or is laid off onto a table meld or onto a
    meld of the opening. ``is_hand`` for the "hand" finish; ``total`` the opening values
    of all ``melds``."""

    melds: tuple[Meld, ...]
    lay_offs: tuple[LayOff, ...]
    discard: HandCard
    is_hand: bool
    total: int
    retrievals: tuple[Retrieval, ...] = ()
    opening_melds: int = 0


@dataclass(frozen=True, slots=True)
class Penalty:
    """The least penalty left in hand, the cards ``left`` and how: the same steps as a
    :class:`GoOutPlan`'s (the first ``opening_melds`` of ``melds``, the ``retrievals``,
    the other melds, the ``lay_offs``)."""

    points: int
    melds: tuple[Meld, ...]
    lay_offs: tuple[LayOff, ...]
    left: tuple[HandCard, ...]
    retrievals: tuple[Retrieval, ...] = ()
    opening_melds: int = 0


@dataclass(slots=True)
class _Outcome:
    value: int
    melds: list[Meld]
    lay_offs: list[LayOff]
    left: list[HandCard]
    opening_melds: int
    """How many of ``melds`` (the first ones) hold no retrieved joker."""


def _cards(hand: Sequence[HandCard] | int) -> list[HandCard]:
    return list(iter_cards(hand)) if isinstance(hand, int) else list(hand)


def _table_view(
    table_melds: Sequence[Meld], counts: list[int]
) -> tuple[list[TableRun], list[int], list[TableSet], list[int]]:
    """The table melds a natural of the hand could be laid off on, for the search."""
    runs: list[TableRun] = []
    run_index: list[int] = []
    sets: list[TableSet] = []
    set_index: list[int] = []
    for index, meld in enumerate(table_melds):
        jokers = sum(1 for c in meld.cards if is_joker(c))
        if meld.kind is MeldKind.RUN:
            suit = meld.faces[0] // RANKS
            if any(counts[suit * RANKS: (suit + 1) * RANKS]):
                low = run_position(meld.faces[0], ace_low=is_ace_low(meld))
                runs.append(TableRun(suit, low, low + len(meld.faces) - 1, jokers))
                run_index.append(index)
        else:
            rank = meld.faces[0] % RANKS
            suits = sum(1 << (f // RANKS) for f in meld.faces)
            if len(meld.faces) < 4 and any(
                counts[s * RANKS + rank] for s in range(4) if not suits >> s & 1
            ):
                sets.append(TableSet(rank, suits, jokers, len(meld.faces)))
                set_index.append(index)
    return runs, run_index, sets, set_index


def _joker_room(meld: Meld, max_jokers: int) -> int:
    jokers = sum(1 for c in meld.cards if is_joker(c))
    limit = HIGH if meld.kind is MeldKind.RUN else 4
    return max(0, min(max_jokers - jokers, limit - len(meld.cards)))


def _alive(
    counts: list[int], jokers: int, max_jokers: int, runs: list[TableRun], sets: list[TableSet]
) -> int:
    """The faces (a 52-bit mask) that could be in some meld or lay-off at all (a necessary
    condition; a face that fails it is simply left in hand)."""
    budget = min(jokers, max_jokers)
    faces = 0
    for face, count in enumerate(counts):
        if count:
            faces |= 1 << face
    alive = 0
    for rank_mask in _RANK_MASKS:  # a set: 3 suits of the rank, or 2 and a joker
        present = faces & rank_mask
        if present and (present.bit_count() >= 3 or (budget and present.bit_count() == 2)):
            alive |= present
    for suit in range(4):
        bits = faces >> (suit * RANKS) & _SUIT_BITS
        if not bits:
            continue
        # A natural is in a run only with naturals close by: three in a row without a
        # joker; with one joker, another natural 1 or 2 positions away (a window of 3
        # holding both); with two jokers in a meld, also 3 away (a window of 4).
        at = bits << 1 | bits >> ACE  # run positions: the ace at 0 and at 13
        if budget == 0:
            three = at & at >> 1 & at >> 2
            live = (three | three << 1 | three << 2) & at
        else:
            near = at << 1 | at >> 1 | at << 2 | at >> 2
            if budget >= 2:
                near |= at << 3 | at >> 3
            live = near & at
        if live:
            alive |= ((live >> 1 | (live & 1) << ACE) & _SUIT_BITS) << (suit * RANKS)
    for table_run in runs:  # a lay-off onto a table meld of the suit or rank
        alive |= faces & (_SUIT_BITS << (table_run.suit * RANKS))
    for table_set in sets:
        alive |= faces & _RANK_MASKS[table_set.rank]
    return alive


_SUIT_BITS = (1 << RANKS) - 1
_RANK_MASKS = tuple(sum(1 << (suit * RANKS + rank) for suit in range(4)) for rank in range(RANKS))


def _solve(
    cards: list[HandCard], *, mode: str, max_jokers: int, ace_low_value: int,
    joker_penalty: int, keep: int, exact_left: bool, table_melds: Sequence[Meld],
    must_use: HandCard | None, floor: int = NEG + 1, open_floor: int = 0,
    retrieved: Sequence[HandCard] = (),
) -> _Outcome | None:
    """The search's best plan, or None when infeasible or below ``floor``. ``retrieved``:
    the jokers of ``cards`` retrieved this turn, which count in no opening value."""
    if must_use is not None and must_use not in cards:
        return None
    counts = [0] * FACES
    present = twins = 0  # the faces held, and those held twice
    for card in cards:
        if card < NATURALS:  # trusted ids: the face is the id modulo a pack
            face = card % PACK_SIZE
            counts[face] += 1
            if present >> face & 1:
                twins |= 1 << face
            present |= 1 << face
    jokers = len(cards) - present.bit_count() - twins.bit_count()
    if table_melds:
        runs, run_index, sets, set_index = _table_view(table_melds, counts)
        related = set(run_index) | set(set_index)
        spare = sum(_joker_room(m, max_jokers) for i, m in enumerate(table_melds)
                    if i not in related)
        alive = _alive(counts, jokers, max_jokers, runs, sets)
    else:  # the same faces as _alive's without a table, read off masks
        runs, run_index, sets, set_index, spare = [], [], [], [], 0
        alive = alive_faces(present | ((1 << jokers) - 1) << 2 * PACK_SIZE, max_jokers)
    dead = [c for c in cards if c < NATURALS and not alive >> (c % PACK_SIZE) & 1]
    if (exact_left and len(dead) > 1) or (must_use is not None and must_use in dead):
        return None
    for card in dead:
        face = card % PACK_SIZE
        counts[face] -= 1
        if twins >> face & 1:
            twins ^= 1 << face
        else:
            present ^= 1 << face
    search = Search(
        counts=counts, jokers=jokers, mode=mode, max_jokers=max_jokers,
        ace_low_value=ace_low_value, joker_penalty=joker_penalty, keep=keep,
        exact_left=exact_left, runs=runs, sets=sets, spare_joker_room=spare,
        required_face=-1 if must_use is None or is_joker(must_use) else natural_of(must_use),
        required_joker=must_use is not None and is_joker(must_use),
        open_floor=open_floor, present=present, twins=twins, uncounted_jokers=len(retrieved),
    )
    left0 = len(dead) if exact_left else min(keep, len(dead))
    value = search.solve(left0, floor)
    if value < floor or value <= NEG // 2:
        return None
    return _build(search, value, left0, cards, dead, table_melds, run_index, set_index,
                  must_use, retrieved)


def _walk(search: Search, left: int) -> tuple[list[tuple[Choice, Table]], int]:
    """Follow the memoised best choices from the start; return each choice with the table
    before it, and how many jokers are laid off at the end."""
    path: list[tuple[Choice, Table]] = []
    x, jokers, table = 0, search.jokers, search.start_table()
    need_face, need_joker = search.required_face >= 0, search.required_joker
    counts = search.key  # the packed counts as the walk takes cards (the search's stay)
    settled = False
    while True:
        rest = counts >> 2 * x  # the packed counts from x on (as Search.best reads them)
        if not rest:
            break
        x += (rest & -rest).bit_length() - 1 >> 1
        key = (counts, jokers, left, table, need_face, need_joker)
        entry = search.memo.get(key)
        if entry is None:
            # Search.best settled the rest without memoising a choice: no joker left, and
            # no card left that could join a meld; they all stay in hand.
            settled = True
            break
        choice = entry[1]
        assert choice is not None, "the walk follows a feasible path"
        path.append((choice, table))
        jokers, left, table, need_face, need_joker, removed = search.step(
            x, choice, jokers, left, table, need_face, need_joker)
        for face in removed:
            counts -= 1 << 2 * face
    laid = 0 if settled else search.end_value(jokers, left, table, need_joker)[1]
    return path, laid


class _Jokers:
    """The plan's jokers as :func:`_build` hands them out, following the search's count
    of retrieved jokers (:attr:`Search.uncounted_jokers`): a joker counted in the opening
    is one of the seat's own, any other a retrieved one while one is left; the taken
    joker (``must_use``) goes to the first new meld holding a joker, as in the search."""

    def __init__(
        self, cards: list[HandCard], retrieved: Sequence[HandCard], must_use: HandCard | None
    ) -> None:
        held = sorted(c for c in cards if c >= NATURALS)
        self.taken = must_use if must_use is not None and is_joker(must_use) else None
        self.retrieved = [c for c in held if c in retrieved]
        self.own = [c for c in held if c not in retrieved and c != self.taken]

    def for_meld(self, count: int, counted: int) -> list[HandCard]:
        """Jokers for a new meld's ``count`` joker positions; bit ``i`` of ``counted`` set
        for a position counted in the opening."""
        chosen = [0] * count
        for position in range(count):
            if counted >> position & 1:
                chosen[position] = self._own()
        for position in range(count):
            if not counted >> position & 1:
                chosen[position] = self._own() if self.taken is not None else self.spare()
        return chosen

    def _own(self) -> HandCard:
        if self.taken is not None:
            taken, self.taken = self.taken, None
            return taken
        return self.own.pop(0)

    def spare(self) -> HandCard:
        """A joker counted nowhere (a lay-off's): a retrieved one while any is left."""
        return (self.retrieved or self.own).pop(0)

    def rest(self) -> list[HandCard]:
        return [*self.own, *self.retrieved, *([] if self.taken is None else [self.taken])]


def _build(
    search: Search, value: int, left0: int, cards: list[HandCard], dead: list[HandCard],
    table_melds: Sequence[Meld], run_index: list[int], set_index: list[int],
    must_use: HandCard | None, retrieved: Sequence[HandCard],
) -> _Outcome:
    path, laid_jokers = _walk(search, left0)
    pool: dict[int, list[HandCard]] = {}
    laid_aside = set(dead)
    for card in sorted(cards):
        if card < NATURALS and card not in laid_aside:  # trusted ids: the face is id % 52
            pool.setdefault(card % PACK_SIZE, []).append(card)
    if must_use is not None and not is_joker(must_use):  # into a new meld first
        face = natural_of(must_use)
        pool[face].remove(must_use)
        pool[face].insert(0, must_use)
    # The new melds' jokers first, then the lay-offs': any order gives the seat's own
    # jokers to the positions counted in the opening (the search made sure there are
    # enough), as long as every other position takes a retrieved joker while one is left.
    jokers = _Jokers(cards, retrieved, must_use)
    floor = search.open_floor
    given: list[list[HandCard]] = [[] for _ in path]
    for at, (choice, before) in enumerate(path):
        if choice[0] == MELD:
            counted = search.mode == "open" or (floor > 0 and before[2] < floor)
            given[at] = jokers.for_meld(choice[1], (1 << choice[1]) - 1 if counted else 0)
        elif choice[0] == CORE:
            given[at] = jokers.for_meld(choice[1], choice[2] >> len(choice) - 4 - choice[1])
    for at, (choice, _) in enumerate(path):
        if choice[0] == LAY:
            given[at] = [jokers.spare() for _ in range(choice[2])]
    opening: list[Meld] = []  # laid before the retrievals
    later: list[Meld] = []  # holding a retrieved joker: after them
    extensions: list[tuple[int, HandCard, int | None]] = []  # onto a meld of the opening
    for (choice, _), joker_cards in zip(path, given, strict=True):
        if choice[0] == MELD:
            faces, core = choice[2:], -1
        elif choice[0] == CORE:
            faces, core = choice[4:], choice[2]
        else:
            continue
        count = len(faces) - len(joker_cards)
        physical = [pool[f].pop(0) for f in faces[:count]] + joker_cards
        stated = tuple(zip(joker_cards, faces[count:], strict=True))
        meld = _meld_of(tuple(physical), stated, search.max_jokers)
        whole = (1 << len(faces)) - 1
        if core in (-1, whole) and not set(joker_cards) & set(retrieved):
            opening.append(meld)
        elif core <= 0:
            later.append(meld)
        else:  # the core with the opening, the rest laid off onto it after the retrievals
            inner = [c for i, c in enumerate(physical) if core >> i & 1]
            opening.append(_meld_of(tuple(inner), stated, search.max_jokers))
            extensions.extend(
                (len(opening) - 1, card, face if is_joker(card) else None)
                for card, face in _outwards(meld, set(inner))
            )
    melds = opening + later
    current = [*table_melds, *melds]
    lay_offs: list[LayOff] = []

    def lay(index: int, card: HandCard, face: int | None) -> None:
        current[index] = lay_off(current[index], card, face, max_jokers=search.max_jokers)
        lay_offs.append(LayOff(index, card, face))

    for (choice, before), joker_cards in zip(path, given, strict=True):
        if choice[0] != LAY:
            continue
        t, joker_count, faces = choice[1], choice[2], choice[5:]
        first_joker = len(faces) - joker_count
        if t < len(run_index):
            low, high, _ = before[0][t]
            low_side = choice[3] < low
            step = [(q, i) for i, f in enumerate(faces)
                    for q in range(HIGH + 1) if face_at(f // RANKS, q) == f
                    and ((q < low) if low_side else (q > high))]
            step.sort(reverse=low_side)
            for _q, i in step:
                joker = i >= first_joker
                card = joker_cards[i - first_joker] if joker else pool[faces[i]].pop(0)
                lay(run_index[t], card, faces[i] if joker else None)
        else:
            lay(set_index[t - len(run_index)], pool[faces[0]].pop(0), None)
    for position, card, joker_face in extensions:
        lay(len(table_melds) + position, card, joker_face)
    for _ in range(laid_jokers):
        index, face = _joker_spot(current[: len(table_melds)], search.max_jokers)
        lay(index, jokers.spare(), face)
    left = dead + [c for copies in pool.values() for c in copies] + jokers.rest()
    return _Outcome(value, melds, lay_offs, left, len(opening))


def _outwards(meld: Meld, core: set[HandCard]) -> list[tuple[HandCard, int]]:
    """The cards of ``meld`` outside its ``core`` with their faces, in an order that lays
    each off onto the core as extended by the ones before: a run's outwards from the core
    (below it downwards, then above it upwards), a set's in any order."""
    pairs = list(zip(meld.cards, meld.faces, strict=True))
    if meld.kind is MeldKind.SET:
        return [pair for pair in pairs if pair[0] not in core]
    inside = [i for i, (card, _face) in enumerate(pairs) if card in core]
    return pairs[: inside[0]][::-1] + pairs[inside[-1] + 1:]


@lru_cache(maxsize=8192)
def _meld_of(
    cards: tuple[HandCard, ...], joker_faces: tuple[tuple[HandCard, int], ...], max_jokers: int
) -> Meld:
    """:func:`~engine.hand.melds.validate_meld` of a meld the search found, remembered:
    hands a turn apart are searched again and again and find the same melds."""
    return validate_meld(cards, dict(joker_faces), max_jokers=max_jokers)


def _joker_spot(table: list[Meld], max_jokers: int) -> tuple[int, int]:
    """A table meld that still takes a joker, and the face the joker states there."""
    for index, meld in enumerate(table):
        if not _joker_room(meld, max_jokers):
            continue
        if meld.kind is MeldKind.SET:
            rank = meld.faces[0] % RANKS
            face = next(s * RANKS + rank for s in range(4) if s * RANKS + rank not in meld.faces)
            return index, face
        low = run_position(meld.faces[0], ace_low=is_ace_low(meld))
        high = low + len(meld.faces) - 1
        suit = meld.faces[0] // RANKS
        if high < HIGH and not (low == 0 and high + 1 == HIGH):
            return index, face_at(suit, high + 1)
        return index, face_at(suit, low - 1)
    raise AssertionError("the search counted room for this joker")


def best_opening(
    hand: Sequence[HandCard] | int, *, ace_low_value: int = 1, max_jokers: int = 1,
    keep: int = 1, must_use: HandCard | None = None, floor: int = 0,
) -> Opening:
    """The highest opening total of disjoint melds from ``hand`` that leaves at least
    ``keep`` card(s) in hand (a turn ends with a discard, docs/rules/hand.md "A turn").
    ``must_use``: a card that must be in the melds (the discard taken this turn).
    Returns total 0 and no melds when the hand makes none (or ``must_use`` fits none), or
    none reaching ``floor``: a threshold lets the search cut every plan below it, which
    makes "can this hand open?" much cheaper than "what is its best opening?".

    >>> from engine.hand.cards import parse_hand_cards
    >>> best_opening(parse_hand_cards("A♠ 2♠ 3♠ 9♥"), ace_low_value=11).total
    16
    >>> best_opening(parse_hand_cards("A♠ 2♠ 3♠ 9♥"), floor=51).total
    0
    """
    outcome = _solve(
        _cards(hand), mode="open", max_jokers=max_jokers, ace_low_value=ace_low_value,
        joker_penalty=DEFAULT_JOKER_PENALTY, keep=keep, exact_left=False, table_melds=(),
        must_use=must_use, floor=floor if floor > 0 else NEG + 1,
    )
    if outcome is None:
        return Opening(0, ())
    return Opening(outcome.value, tuple(outcome.melds))


def melds_holding(
    hand: Sequence[HandCard] | int, card: HandCard, *, max_jokers: int = 1, keep: int = 1,
) -> tuple[Meld, ...]:
    """Some disjoint new melds of ``hand`` with ``card`` in one of them, leaving at least
    ``keep`` cards (the first plan the search finds, not the best), or ``()`` when there
    is none: whether a seat that has opened can meld the discard it takes.

    >>> from engine.hand.cards import parse_hand_card, parse_hand_cards
    >>> len(melds_holding(parse_hand_cards("7♠ 8♠ 9♠ 2♥"), parse_hand_card("9♠")))
    1
    """
    outcome = _solve(
        _cards(hand), mode="none", max_jokers=max_jokers, ace_low_value=1,
        joker_penalty=DEFAULT_JOKER_PENALTY, keep=keep, exact_left=False, table_melds=(),
        must_use=card,
    )
    return () if outcome is None else tuple(outcome.melds)


def can_go_out(
    hand: Sequence[HandCard] | int, table_melds: Sequence[Meld] = (), *, has_opened: bool,
    open_min: int = 51, ace_low_value: int = 1, max_jokers: int = 1,
    hand_finish_allowed: bool = True, hand_waives_open_min: bool = True,
    must_use: HandCard | None = None,
) -> GoOutPlan | None:
    """A plan to go out this turn, or ``None``: every card but exactly one placed in new
    melds or (when opened, or opening this turn) laid off on ``table_melds``; before
    opening, the new melds total at least ``open_min``. When not yet opened and
    ``hand_finish_allowed``, the "hand" finish comes first: the whole hand but the
    discard laid as new melds, no lay-offs, ``open_min`` waived when
    ``hand_waives_open_min`` (docs/rules/hand.md "End of a round"). ``must_use`` must end in a
    new meld (the discard taken this turn). Table jokers may be retrieved with natural
    cards of the hand (never ``must_use``; docs/rules/hand.md "Joker retrieval"): at once
    by a seat that has opened, after its opening by one that opens this turn (the
    retrieved jokers then count in no opening).

    >>> from engine.hand.cards import hand_card_name, parse_hand_cards
    >>> plan = can_go_out(parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 9♦ 10♦ 2♥"), has_opened=False)
    >>> plan.is_hand, len(plan.melds), hand_card_name(plan.discard)
    (True, 3, '2♥')
    """
    cards = _cards(hand)
    if not cards:
        return None
    # before opening, an opening of at least one meld (open_min may be 0), counted first
    mode, floor = ("none", NEG + 1) if has_opened else ("open", max(open_min, 1))

    def plan(outcome: _Outcome, retrievals: tuple[Retrieval, ...] = ()) -> GoOutPlan:
        total = sum(meld_value(m, ace_low_value=ace_low_value) for m in outcome.melds)
        return GoOutPlan(tuple(outcome.melds), tuple(outcome.lay_offs), outcome.left[0],
                         False, total, retrievals, 0 if has_opened else outcome.opening_melds)

    def solve(held: list[HandCard], table: Sequence[Meld], retrieved: list[HandCard],
              solve_mode: str = mode, at_least: int = floor) -> _Outcome | None:
        return _solve(held, mode=solve_mode, max_jokers=max_jokers, ace_low_value=ace_low_value,
                      joker_penalty=DEFAULT_JOKER_PENALTY, keep=1, exact_left=True,
                      table_melds=table, must_use=must_use, floor=at_least, retrieved=retrieved)

    if not has_opened and hand_finish_allowed:
        waived = hand_waives_open_min
        outcome = solve(cards, (), [], "none" if waived else "open",
                        NEG + 1 if waived else open_min)
        if outcome is not None and outcome.melds:
            total = sum(meld_value(m, ace_low_value=ace_low_value) for m in outcome.melds)
            return GoOutPlan(tuple(outcome.melds), (), outcome.left[0], True, total,
                             opening_melds=len(outcome.melds))
        if waived and not table_melds:  # no table: going out is a hand or nothing
            return None
    outcome = solve(cards, table_melds, [])
    if outcome is not None:
        return plan(outcome)
    sets = _retrieval_sets(cards, table_melds, must_use)
    if sets:
        # Going out leaves one card, so two cards that nothing could take even with every
        # table joker in hand rule out every retrieval at once.
        richest = cards + list({r.joker for group in sets for r in group})
        offered = {c for group in sets for r in group for c in r.cards}
        if sum(c not in offered for c in _dead_cards(richest, table_melds, max_jokers)) > 1:
            return None
    for retrievals in sets:
        held, table = _retrieved(cards, table_melds, retrievals)
        outcome = solve(held, table, [r.joker for r in retrievals])
        if outcome is not None:
            return plan(outcome, retrievals)
    return None


def _retrieval_sets(
    cards: list[HandCard], table_melds: Sequence[Meld], keep: HandCard | None,
) -> list[tuple[Retrieval, ...]]:
    """Every non-empty set of joker retrievals ``cards`` can make together on
    ``table_melds``, never giving ``keep``: one choice of physical cards each (the two
    packs' copies of a face are alike for the search), distinct within a set. The table
    holds at most two jokers, so there are at most three sets."""
    offers: list[tuple[int, tuple[int, ...], HandCard]] = []
    held: set[HandCard] = set()
    for index, meld in enumerate(table_melds):
        for faces, joker in _joker_offers(meld):
            held = held or set(cards) - {keep}
            if all(face in held or PACK_SIZE + face in held for face in faces):
                offers.append((index, faces, joker))
    if not offers:
        return []
    sets: list[tuple[Retrieval, ...]] = []
    for count in range(1, len(offers) + 1):
        for group in combinations(offers, count):
            copies = {face: [c for c in (face, PACK_SIZE + face) if c in held]
                      for _index, faces, _joker in group for face in faces}
            retrievals = []
            for index, faces, joker in group:
                if not all(copies[face] for face in faces):
                    break
                retrievals.append(Retrieval(index, tuple(copies[f].pop(0) for f in faces), joker))
            else:
                sets.append(tuple(retrievals))
    return sets


def _joker_offers(meld: Meld) -> tuple[tuple[tuple[int, ...], HandCard], ...]:
    """:func:`~engine.hand.melds.joker_retrievals` of ``meld``, remembered: a table meld is
    asked about at every search while it stays unchanged."""
    key = (meld.cards, meld.faces)  # plain tuples hash faster than the meld record
    found = _OFFERS.get(key)
    if found is None:
        found = tuple(joker_retrievals(meld)) if max(meld.cards) >= NATURALS else ()
        if len(_OFFERS) >= 1 << 14:
            _OFFERS.clear()  # one call: safe should threads share the memo
        _OFFERS[key] = found
    return found


_OFFERS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[tuple[int, ...], int], ...]] = {}


def _retrieved(
    cards: list[HandCard], table_melds: Sequence[Meld], retrievals: tuple[Retrieval, ...]
) -> tuple[list[HandCard], list[Meld]]:
    """The hand and the table after ``retrievals``."""
    given = {card for retrieval in retrievals for card in retrieval.cards}
    held = [c for c in cards if c not in given] + [r.joker for r in retrievals]
    table = list(table_melds)
    for retrieval in retrievals:
        table[retrieval.meld_index] = retrieve_joker(
            table[retrieval.meld_index], retrieval.cards)[0]
    return held, table


def _dead_cards(
    cards: list[HandCard], table_melds: Sequence[Meld], max_jokers: int
) -> list[HandCard]:
    """The naturals of ``cards`` that no new meld or lay-off on ``table_melds`` can take."""
    counts = [0] * FACES
    for card in cards:
        if card < NATURALS:
            counts[card % PACK_SIZE] += 1
    jokers = len(cards) - sum(counts)
    runs, _, sets, _ = _table_view(table_melds, counts)
    alive = _alive(counts, jokers, max_jokers, runs, sets)
    return [c for c in cards if c < NATURALS and not alive >> (c % PACK_SIZE) & 1]


def min_penalty(
    hand: Sequence[HandCard] | int, *, table_melds: Sequence[Meld] = (),
    can_lay_off: bool = True, max_jokers: int = 1,
    joker_penalty: int = DEFAULT_JOKER_PENALTY, keep: int = 0, has_opened: bool = True,
    open_min: int = 51, ace_low_value: int = 1, hand_waives_open_min: bool = True,
) -> Penalty:
    """The least penalty (docs/rules/hand.md "Cards": A 11, joker ``joker_penalty``) that can be
    left in hand after laying new melds and, when ``can_lay_off``, laying off on
    ``table_melds`` and retrieving its jokers (docs/rules/hand.md "Joker retrieval"; a
    retrieved joker may stay in hand); at least ``keep`` cards stay in hand.

    A seat that has not opened (``has_opened`` false) lays nothing unless its new melds
    reach ``open_min`` (their opening values: ``ace_low_value`` for A-2-3's ace, a joker
    its face), or, with ``hand_waives_open_min``, unless it lays its whole hand but one
    card as new melds (a "hand"); an unopened seat that lays nothing keeps every card.
    It retrieves jokers only after such an opening (of one meld at least), and they count
    in no opening.

    >>> from engine.hand.cards import parse_hand_cards
    >>> min_penalty(parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ K♥")).points
    18
    >>> min_penalty(parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ K♥"), has_opened=False).points
    60
    """
    cards = _cards(hand)
    total = sum(penalty_value(c, joker_penalty=joker_penalty) for c in cards)
    table = table_melds if can_lay_off else ()

    def solve(
        open_floor: int, exact_left: bool, melds_on_table: Sequence[Meld],
        retrievals: tuple[Retrieval, ...] = (), below: int | None = None,
    ) -> Penalty:
        held, held_total = cards, total
        if retrievals:
            held, melds_on_table = _retrieved(cards, melds_on_table, retrievals)
            held_total = sum(penalty_value(c, joker_penalty=joker_penalty) for c in held)
        outcome = _solve(
            held, mode="penalty", max_jokers=max_jokers, ace_low_value=ace_low_value,
            joker_penalty=joker_penalty, keep=keep, exact_left=exact_left,
            table_melds=melds_on_table, must_use=None, open_floor=open_floor,
            retrieved=[r.joker for r in retrievals],
            # only a plan leaving fewer than ``below`` points is worth building
            floor=NEG + 1 if below is None else held_total - below + 1,
        )
        if outcome is None:  # fewer than ``keep`` cards, or no plan reaches the floor
            return Penalty(total, (), (), tuple(cards))
        return Penalty(held_total - outcome.value, tuple(outcome.melds),
                       tuple(outcome.lay_offs), tuple(outcome.left), retrievals,
                       0 if has_opened else outcome.opening_melds)

    nothing = Penalty(total, (), (), tuple(cards))
    sets = _retrieval_sets(cards, table, None)
    floor = max(open_min, 1)  # an opening is a meld at least: lay-offs need one
    if has_opened:
        # A retrieval nearly always helps when the hand can make one (the joker goes
        # back onto a run's end, if nowhere better), so the plans with retrievals come
        # first and the plain one is searched only for as good a plan.
        best = nothing
        for retrievals in reversed(sets):
            best = min(best, solve(0, False, table, retrievals, best.points), key=_points)
        return min(solve(0, False, table, below=best.points + 1), best, key=_points)
    free = solve(0, False, table)
    opening = sum(meld_value(m, ace_low_value=ace_low_value) for m in free.melds)
    best = free if opening >= floor else nothing
    if opening < floor:
        best = min(best, solve(floor, False, table), key=_points)
    if hand_waives_open_min and keep <= 1 and len(cards) > 1:
        whole = solve(0, True, ())
        if whole.melds:
            best = min(best, whole, key=_points)
    for retrievals in sets:
        best = min(best, solve(floor, False, table, retrievals, best.points), key=_points)
    return best


def _points(penalty: Penalty) -> int:
    return penalty.points
