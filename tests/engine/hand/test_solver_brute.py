"""The exact solver agrees with an independent brute force on small hands.

The brute force knows nothing of the solver's counts, positions or memo: it tries every
subset of physical cards as a meld through :func:`validate_meld` (every plausible joker
face), every family of disjoint melds, and every sequence of :func:`lay_off` calls.
docs/rules/hand.md "What the bot and the client need from the engine".
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import combinations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.errors import RuleViolation
from engine.hand.cards import (
    JOKERS,
    hand_card_of,
    is_joker,
    natural_of,
    parse_hand_cards,
    penalty_value,
)
from engine.hand.melds import Meld, lay_off, meld_value, retrieve_joker, validate_meld
from engine.hand.solver import best_opening, can_go_out, min_penalty

# Faces near the corners of a suit (2 3 4 5 and Q K A) in three suits, both packs, and
# both jokers: small random hands then hold runs, sets, aces low and high, and wraps.
UNIVERSE = sorted(
    [hand_card_of(suit * 13 + rank, copy) for suit in range(3) for rank in (0, 1, 2, 3, 10, 11, 12)
     for copy in (0, 1)] + list(JOKERS)
)
TABLE_CHOICES: tuple[tuple[str, dict[int, int]], ...] = (
    ("3♠' 4♠' 5♠'", {}),
    ("Q♥ K♥ A♥", {}),
    ("2♣ 3♣ JK2", {105: 2 * 13 + 2}),
    ("K♠ K♥ K♣", {}),
    ("5♥ 5♣ 5♦", {}),
    ("A♦ 2♦ 3♦", {}),
)


def _joker_faces(naturals: Sequence[int]) -> list[int]:
    first = natural_of(naturals[0])
    suit, rank = divmod(first, 13)
    return sorted({suit * 13 + r for r in range(13)} | {s * 13 + rank for s in range(4)})


def _melds_of(cards: frozenset[int], max_jokers: int) -> list[tuple[frozenset[int], int, Meld]]:
    """Every valid meld of ``cards`` with its best opening value (a meld per card subset)."""
    found = []
    for size in range(3, len(cards) + 1):
        for subset in combinations(sorted(cards), size):
            jokers = [c for c in subset if is_joker(c)]
            naturals = [c for c in subset if not is_joker(c)]
            if len(naturals) < 2 or len(jokers) > max_jokers:
                continue
            options: list[dict[int, int]] = [{}]
            for joker in jokers:
                options = [{**o, joker: f} for o in options for f in _joker_faces(naturals)]
            best: tuple[int, Meld] | None = None
            for faces in options:
                try:
                    meld = validate_meld(subset, faces, max_jokers=max_jokers)
                except RuleViolation:
                    continue
                value = meld_value(meld)
                if best is None or value > best[0]:
                    best = (value, meld)
            if best is not None:
                found.append((frozenset(subset), best[0], best[1]))
    return found


def _families(cards: frozenset[int], max_jokers: int) -> list[tuple[frozenset[int], int]]:
    """Every family of disjoint melds: (cards left, opening total)."""
    melds = _melds_of(cards, max_jokers)
    out: list[tuple[frozenset[int], int]] = []

    def walk(left: frozenset[int], total: int, start: int) -> None:
        out.append((left, total))
        for i in range(start, len(melds)):
            used, value, _meld = melds[i]
            if used <= left:
                walk(left - used, total + value, i + 1)

    walk(cards, 0, 0)
    return out


def _lay_off_outcomes(
    left: frozenset[int], table: tuple[Meld, ...], max_jokers: int
) -> set[frozenset[int]]:
    """Every set of cards that can remain after laying off any of ``left`` in sequence."""

    @cache
    def walk(rest: frozenset[int], melds: tuple[Meld, ...]) -> frozenset[frozenset[int]]:
        results = {rest}
        for card in rest:
            for index, meld in enumerate(melds):
                faces: list[int | None] = [None]
                if is_joker(card):
                    faces = list(_joker_faces([c for c in meld.cards if not is_joker(c)]))
                for face in faces:
                    try:
                        new = lay_off(meld, card, face, max_jokers=max_jokers)
                    except RuleViolation:
                        continue
                    changed = (*melds[:index], new, *melds[index + 1:])
                    results |= walk(rest - {card}, changed)
        return frozenset(results)

    return set(walk(left, table))


def _penalty(cards: frozenset[int]) -> int:
    return sum(penalty_value(c) for c in cards)


random_hands = st.lists(st.sampled_from(UNIVERSE), min_size=6, max_size=9, unique=True)


@st.composite
def meld_rich_hands(draw: st.DrawFn) -> list[int]:
    """Hands grown around run and set seeds, so going out and laying off happen often."""
    hand: set[int] = set()
    target = draw(st.integers(6, 9))
    while len(hand) < target:
        card = draw(st.sampled_from(UNIVERSE))
        hand.add(card)
        if is_joker(card):
            continue
        suit, rank = divmod(natural_of(card), 13)
        if draw(st.booleans()):  # grow a run upwards (K-A-2 wraps included, to be refused)
            partners = [suit * 13 + (rank + d) % 13 for d in (1, 2)]
        else:  # grow a set
            partners = [s * 13 + rank for s in range(3) if s != suit][:2]
        for face in partners:
            copies = [c for c in UNIVERSE if not is_joker(c) and natural_of(c) == face]
            if copies:
                hand.add(draw(st.sampled_from(copies)))
    return sorted(hand)[:9]


hands = st.one_of(random_hands, meld_rich_hands())
tables = st.lists(st.sampled_from(range(len(TABLE_CHOICES))), max_size=2, unique=True)


def _table(indexes: list[int], hand: list[int]) -> tuple[Meld, ...]:
    melds = []
    for index in indexes:
        text, faces = TABLE_CHOICES[index]
        cards = parse_hand_cards(text)
        if not set(cards) & set(hand):
            melds.append(validate_meld(cards, faces))
    return tuple(melds)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hand=hands, keep=st.sampled_from([0, 1, 2]), max_jokers=st.sampled_from([1, 1, 2]),
       must_index=st.integers(0, 8))
def test_best_opening_equals_brute_force(
    hand: list[int], keep: int, max_jokers: int, must_index: int
) -> None:
    # docs/rules/hand.md "Melds"/"Opening": the best total of disjoint melds, keeping a discard;
    # option max_jokers_per_meld
    families = _families(frozenset(hand), max_jokers)
    expected = max(t for left, t in families if len(left) >= keep)
    found = best_opening(hand, keep=keep, max_jokers=max_jokers)
    assert found.total == expected
    used = [c for m in found.melds for c in m.cards]
    assert len(used) == len(set(used)) and set(used) <= set(hand)
    assert len(hand) - len(used) >= keep
    assert sum(meld_value(m) for m in found.melds) == found.total
    # the taken discard must be in the opening (docs/rules/hand.md "A turn" 1)
    must = hand[must_index % len(hand)]
    with_must = [t for left, t in families if len(left) >= keep and must not in left]
    forced = best_opening(hand, keep=keep, max_jokers=max_jokers, must_use=must)
    assert forced.total == max(with_must, default=0)
    assert not with_must or any(must in m.cards for m in forced.melds)


def _retrieved(
    hand: frozenset[int], table: tuple[Meld, ...], keep: int | None = None
) -> list[tuple[frozenset[int], tuple[Meld, ...]]]:
    """The hand and table after every sequence of joker retrievals (none included), each
    tried with every choice of physical cards through :func:`retrieve_joker`."""
    found = [(hand, table)]
    for index, meld in enumerate(table):
        if not any(is_joker(c) for c in meld.cards):
            continue
        for size in (1, 2):
            for offered in combinations(sorted(hand - {keep}), size):
                try:
                    new, joker = retrieve_joker(meld, offered)
                except RuleViolation:
                    continue
                changed = (*table[:index], new, *table[index + 1:])
                found += _retrieved((hand - set(offered)) | {joker}, changed, keep)
    return found


def _goes_out(
    hand: frozenset[int], table: tuple[Meld, ...], has_opened: bool, open_min: int,
    must: int | None,
) -> tuple[bool, bool]:
    """(a "hand" finish exists, an ordinary finish exists), by brute force; a seat that has
    opened may retrieve table jokers first."""
    families = _families(hand, 1)
    fits = [(left, total) for left, total in families if must is None or must not in left]
    is_hand = not has_opened and any(len(left) == 1 for left, _ in fits)
    positions = _retrieved(hand, table, must) if has_opened else [(hand, table)]
    regular = any(
        any(len(rest) == 1 for rest in _lay_off_outcomes(left, melds, 1))
        for held, melds in positions
        for left, total in (fits if held == hand else _families(held, 1))
        if (must is None or must not in left) and (has_opened or total >= max(open_min, 1))
    )
    return is_hand, regular


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hand=hands, table_indexes=tables, has_opened=st.booleans(),
       open_min=st.sampled_from([0, 20, 51]))
def test_can_go_out_equals_brute_force(
    hand: list[int], table_indexes: list[int], has_opened: bool, open_min: int
) -> None:
    # docs/rules/hand.md "End of a round": all cards but the discard placed; the hand finish.
    # Before opening, lay-offs need an opening laid this turn (a meld, total >= open_min);
    # once opened, table jokers may be retrieved first ("Joker retrieval").
    table = _table(table_indexes, hand)
    is_hand, regular = _goes_out(frozenset(hand), table, has_opened, open_min, None)
    plan = can_go_out(hand, table, has_opened=has_opened, open_min=open_min)
    assert (plan is not None) == (is_hand or regular)
    if plan is None:
        return
    assert plan.is_hand == is_hand
    # the plan replays: retrievals, melds from the hand, lay-offs valid in order, a discard
    current = list(table)
    held = list(hand)
    for retrieval in plan.retrievals:
        current[retrieval.meld_index], joker = retrieve_joker(
            current[retrieval.meld_index], retrieval.cards)
        assert joker == retrieval.joker
        held = [c for c in held if c not in retrieval.cards] + [joker]
    used = [c for m in plan.melds for c in m.cards] + [lo.card for lo in plan.lay_offs]
    assert sorted([*used, plan.discard]) == sorted(held)
    for step in plan.lay_offs:
        current[step.meld_index] = lay_off(current[step.meld_index], step.card, step.joker_face)
    if plan.is_hand:
        assert not plan.lay_offs and not plan.retrievals
    elif not has_opened:
        assert plan.total >= open_min and not plan.retrievals
    # the taken discard must end in a new meld (docs/rules/hand.md "A turn" 1)
    must = hand[0]
    must_hand, must_regular = _goes_out(frozenset(hand), table, has_opened, open_min, must)
    forced = can_go_out(hand, table, has_opened=has_opened, open_min=open_min, must_use=must)
    assert (forced is not None) == (must_hand or must_regular)
    assert forced is None or any(must in m.cards for m in forced.melds)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hand=hands, table_indexes=tables, can_lay=st.booleans(), keep=st.sampled_from([0, 1]),
       has_opened=st.booleans(), open_min=st.sampled_from([0, 20, 51]))
def test_min_penalty_equals_brute_force(
    hand: list[int], table_indexes: list[int], can_lay: bool, keep: int, has_opened: bool,
    open_min: int,
) -> None:
    # docs/rules/hand.md "Scoring": penalty values left in hand (A 11, joker 15); a seat that
    # has not opened lays nothing unless it opens (>= open_min) or lays a "hand".
    table = _table(table_indexes, hand) if can_lay else ()
    families = _families(frozenset(hand), 1)
    expected = min(
        _penalty(rest)
        for left, total in families
        if has_opened or total >= open_min or left == frozenset(hand)
        for rest in _lay_off_outcomes(left, table, 1)
        if len(rest) >= keep and (has_opened or total >= open_min or rest == left)
    )
    if not has_opened and keep <= 1:
        expected = min([expected, *(_penalty(left) for left, _ in families if len(left) == 1)])
    found = min_penalty(hand, table_melds=table, can_lay_off=can_lay, keep=keep,
                        has_opened=has_opened, open_min=open_min)
    assert found.points == expected
    used = [c for m in found.melds for c in m.cards] + [lo.card for lo in found.lay_offs]
    assert _penalty(frozenset(hand) - set(used)) == found.points
