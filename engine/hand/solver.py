"""The exact meld solver of Hand: best opening, going out this turn, least penalty.

rules/hand.md "What the bot and the client need from the engine": the best opening total
a hand can make, whether the hand can go out this turn (lay-offs on table melds included),
and the minimum penalty left in hand. Greedy meld choice is wrong (6♠7♠8♠ + 6♣7♣8♣ + 8♦:
taking 8♠8♣8♦ strands the rest), so every answer comes from an exhaustive search with
memoisation (:mod:`engine.hand._search`), never capped by a node limit. Cards that can
join no meld at all are set aside first, which makes most random hands trivial.

Not modelled: retrieving a table joker during the turn (rules/hand.md "Joker retrieval")
as a step towards going out; ``must_beat_previous`` is the caller's ``open_min``.

>>> from engine.hand.cards import parse_hand_cards
>>> best_opening(parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 2♥")).total
42
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.core.cards import PACK_SIZE, iter_cards
from engine.hand._search import (
    ACE,
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
    lay_off,
    meld_value,
    run_position,
    validate_meld,
)

__all__ = ["GoOutPlan", "LayOff", "Opening", "Penalty", "best_opening", "can_go_out",
           "min_penalty"]


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
class GoOutPlan:
    """How to go out this turn: lay ``melds``, then ``lay_offs`` in order (each valid by
    :func:`~engine.hand.melds.lay_off` on the table as changed by the ones before), then
    discard ``discard``. ``is_hand`` for the "hand" finish; ``total`` the new melds'
    opening total."""

    melds: tuple[Meld, ...]
    lay_offs: tuple[LayOff, ...]
    discard: HandCard
    is_hand: bool
    total: int


@dataclass(frozen=True, slots=True)
class Penalty:
    """The least penalty left in hand, and the melds and lay-offs that leave it."""

    points: int
    melds: tuple[Meld, ...]
    lay_offs: tuple[LayOff, ...]


@dataclass(slots=True)
class _Outcome:
    value: int
    melds: list[Meld]
    lay_offs: list[LayOff]
    left: list[HandCard]


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
) -> list[bool]:
    """Whether each face could be in some meld or lay-off at all (a necessary condition;
    a face that fails it is simply left in hand)."""
    budget = min(jokers, max_jokers)
    present = [0] * 4  # per suit, bit p set when run position p holds a natural
    suits_of_rank = [0] * RANKS
    faces = [f for f in range(FACES) if counts[f]]
    for face in faces:
        suit, rank = divmod(face, RANKS)
        present[suit] |= (1 | 1 << HIGH) if rank == ACE else 1 << (rank + 1)
        suits_of_rank[rank] += 1
    # a run through a position holds a window of 3 positions (at most 1 joker) or, with
    # two jokers allowed, of 4 (at most 2) around it: mark the naturals of such windows
    windows = ((0b111, 3 - min(budget, 1)), (0b1111, 4 - min(budget, 2)))
    in_runs = [0] * 4
    for suit, bits in enumerate(present):
        if bits.bit_count() < 2:
            continue
        for mask, naturals_needed in windows:
            for a in range(HIGH + 2 - mask.bit_length()):
                if (bits >> a & mask).bit_count() >= naturals_needed:
                    in_runs[suit] |= bits & (mask << a)
    table_suits = {r.suit for r in runs}
    table_ranks = {t.rank for t in sets}
    alive = [False] * FACES
    for face in faces:
        suit, rank = divmod(face, RANKS)
        here = suits_of_rank[rank]
        position_bits = (1 | 1 << HIGH) if rank == ACE else 1 << (rank + 1)
        alive[face] = (
            here >= 3 or (here == 2 and budget > 0) or bool(in_runs[suit] & position_bits)
            or suit in table_suits or rank in table_ranks
        )
    return alive


def _solve(
    cards: list[HandCard], *, mode: str, max_jokers: int, ace_low_value: int,
    joker_penalty: int, keep: int, exact_left: bool, table_melds: Sequence[Meld],
    must_use: HandCard | None, floor: int = NEG + 1,
) -> _Outcome | None:
    """The search's best plan, or None when infeasible or below ``floor``."""
    if must_use is not None and must_use not in cards:
        return None
    counts = [0] * FACES
    for card in cards:
        if card < NATURALS:  # trusted ids: the face is the id modulo a pack
            counts[card % PACK_SIZE] += 1
    jokers = len(cards) - sum(counts)
    runs, run_index, sets, set_index = _table_view(table_melds, counts)
    related = set(run_index) | set(set_index)
    spare = sum(_joker_room(m, max_jokers) for i, m in enumerate(table_melds)
                if i not in related)
    alive = _alive(counts, jokers, max_jokers, runs, sets)
    dead = [c for c in cards if c < NATURALS and not alive[c % PACK_SIZE]]
    if (exact_left and len(dead) > 1) or (must_use is not None and must_use in dead):
        return None
    for card in dead:
        counts[natural_of(card)] -= 1
    search = Search(
        counts=counts, jokers=jokers, mode=mode, max_jokers=max_jokers,
        ace_low_value=ace_low_value, joker_penalty=joker_penalty, keep=keep,
        exact_left=exact_left, runs=runs, sets=sets, spare_joker_room=spare,
        required_face=-1 if must_use is None or is_joker(must_use) else natural_of(must_use),
        required_joker=must_use is not None and is_joker(must_use),
    )
    left0 = len(dead) if exact_left else min(keep, len(dead))
    value = search.solve(left0, floor)
    if value < floor or value <= NEG // 2:
        return None
    return _build(search, value, left0, cards, dead, table_melds, run_index, set_index,
                  must_use)


def _walk(search: Search, left: int) -> tuple[list[tuple[Choice, Table]], int]:
    """Follow the memoised best choices from the start; return each choice with the table
    before it, and how many jokers are laid off at the end."""
    path: list[tuple[Choice, Table]] = []
    removed_all: list[int] = []
    x, jokers, table = 0, search.jokers, search.start_table()
    need_face, need_joker = search.required_face >= 0, search.required_joker
    while True:
        while x < FACES and search.counts[x] == 0:
            x += 1
        if x == FACES:
            break
        key = (search.key, jokers, left, table, need_face, need_joker)
        choice = search.memo[key][1]
        assert choice is not None, "the walk follows a feasible path"
        path.append((choice, table))
        jokers, left, table, need_face, need_joker, removed, _lost = search.apply(
            x, choice, jokers, left, table, need_face, need_joker)
        removed_all.extend(removed)
    laid = search.end_value(jokers, left, table, need_joker)[1]
    search.restore(removed_all)
    return path, laid


def _build(
    search: Search, value: int, left0: int, cards: list[HandCard], dead: list[HandCard],
    table_melds: Sequence[Meld], run_index: list[int], set_index: list[int],
    must_use: HandCard | None,
) -> _Outcome:
    path, laid_jokers = _walk(search, left0)
    pool: dict[int, list[HandCard]] = {}
    for card in sorted(c for c in cards if c not in dead):
        pool.setdefault(-1 if is_joker(card) else natural_of(card), []).append(card)
    if must_use is not None:  # the required card goes into a new meld first
        face = -1 if is_joker(must_use) else natural_of(must_use)
        pool[face].remove(must_use)
        pool[face].insert(0, must_use)
    new_melds: list[tuple[tuple[int, ...], int]] = [
        (choice[2:], choice[1]) for choice, _ in path if choice[0] == MELD
    ]
    melds = []
    for faces, joker_count in new_melds:
        physical = [pool[f].pop(0) for f in faces[: len(faces) - joker_count]]
        stated = {pool[-1].pop(0): f for f in faces[len(faces) - joker_count:]}
        melds.append(validate_meld([*physical, *stated], stated, max_jokers=search.max_jokers))
    table = list(table_melds)
    lay_offs: list[LayOff] = []

    def lay(index: int, card: HandCard, face: int | None) -> None:
        table[index] = lay_off(table[index], card, face, max_jokers=search.max_jokers)
        lay_offs.append(LayOff(index, card, face))

    for choice, before in path:
        if choice[0] != LAY:
            continue
        t, joker_count, faces = choice[1], choice[2], choice[5:]
        jokers_of = set(range(len(faces) - joker_count, len(faces)))
        if t < len(run_index):
            low, high, _ = before[0][t]
            low_side = choice[3] < low
            step = [(q, i) for i, f in enumerate(faces)
                    for q in range(HIGH + 1) if face_at(f // RANKS, q) == f
                    and ((q < low) if low_side else (q > high))]
            step.sort(reverse=low_side)
            for _q, i in step:
                card = pool[-1].pop(0) if i in jokers_of else pool[faces[i]].pop(0)
                lay(run_index[t], card, faces[i] if i in jokers_of else None)
        else:
            lay(set_index[t - len(run_index)], pool[faces[0]].pop(0), None)
    for _ in range(laid_jokers):
        joker = pool[-1].pop(0)
        index, face = _joker_spot(table, search.max_jokers)
        lay(index, joker, face)
    left = dead + [c for copies in pool.values() for c in copies]
    return _Outcome(value, melds, lay_offs, left)


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
    keep: int = 1, must_use: HandCard | None = None,
) -> Opening:
    """The highest opening total of disjoint melds from ``hand`` that leaves at least
    ``keep`` card(s) in hand (a turn ends with a discard, rules/hand.md "A turn").
    ``must_use``: a card that must be in the melds (the discard taken this turn).
    Returns total 0 and no melds when the hand makes none (or ``must_use`` fits none).

    >>> from engine.hand.cards import parse_hand_cards
    >>> best_opening(parse_hand_cards("A♠ 2♠ 3♠ 9♥"), ace_low_value=11).total
    16
    """
    outcome = _solve(
        _cards(hand), mode="open", max_jokers=max_jokers, ace_low_value=ace_low_value,
        joker_penalty=DEFAULT_JOKER_PENALTY, keep=keep, exact_left=False, table_melds=(),
        must_use=must_use,
    )
    if outcome is None:
        return Opening(0, ())
    return Opening(outcome.value, tuple(outcome.melds))


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
    discard laid as new melds at once, no lay-offs, ``open_min`` waived when
    ``hand_waives_open_min`` (rules/hand.md "End of a round"). ``must_use`` must end in a
    new meld (the discard taken this turn).

    >>> from engine.hand.cards import hand_card_name, parse_hand_cards
    >>> plan = can_go_out(parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 9♦ 10♦ 2♥"), has_opened=False)
    >>> plan.is_hand, len(plan.melds), hand_card_name(plan.discard)
    (True, 3, '2♥')
    """
    cards = _cards(hand)
    if not cards:
        return None
    def solve(mode: str, table: Sequence[Meld]) -> _Outcome | None:
        return _solve(cards, mode=mode, max_jokers=max_jokers, ace_low_value=ace_low_value,
                      joker_penalty=DEFAULT_JOKER_PENALTY, keep=1, exact_left=True,
                      table_melds=table, must_use=must_use,
                      floor=open_min if mode == "open" else NEG + 1)

    if not has_opened and hand_finish_allowed:
        waived = hand_waives_open_min
        outcome = solve("none" if waived else "open", ())
        if outcome is not None and outcome.melds:
            total = sum(meld_value(m, ace_low_value=ace_low_value) for m in outcome.melds)
            return GoOutPlan(tuple(outcome.melds), (), outcome.left[0], True, total)
        if waived and not table_melds:  # no table: going out is a hand or nothing
            return None
    outcome = solve("none" if has_opened else "open", table_melds)
    if outcome is None or not (has_opened or outcome.melds):  # an opening lays a meld
        return None
    total = sum(meld_value(m, ace_low_value=ace_low_value) for m in outcome.melds)
    return GoOutPlan(tuple(outcome.melds), tuple(outcome.lay_offs), outcome.left[0], False,
                     total)


def min_penalty(
    hand: Sequence[HandCard] | int, *, table_melds: Sequence[Meld] = (),
    can_lay_off: bool = True, max_jokers: int = 1,
    joker_penalty: int = DEFAULT_JOKER_PENALTY, keep: int = 0,
) -> Penalty:
    """The least penalty (rules/hand.md "Cards": A 11, joker ``joker_penalty``) that can be
    left in hand after laying new melds and, when ``can_lay_off``, laying off on
    ``table_melds``; at least ``keep`` cards stay in hand. Opening thresholds are the
    caller's concern (an unopened player scores a flat 100).

    >>> from engine.hand.cards import parse_hand_cards
    >>> min_penalty(parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ K♥")).points
    18
    """
    cards = _cards(hand)
    outcome = _solve(
        cards, mode="penalty", max_jokers=max_jokers, ace_low_value=1,
        joker_penalty=joker_penalty, keep=keep, exact_left=False,
        table_melds=table_melds if can_lay_off else (), must_use=None,
    )
    total = sum(penalty_value(c, joker_penalty=joker_penalty) for c in cards)
    if outcome is None:  # only when fewer than ``keep`` cards are held
        return Penalty(total, (), ())
    return Penalty(total - outcome.value, tuple(outcome.melds), tuple(outcome.lay_offs))
