"""The exact solver agrees with an independent brute force on small hands.

The brute force knows nothing of the solver's counts, positions, cores or memo: it tries
every subset of physical cards as a meld through :func:`validate_meld` (every plausible
joker face), every family of disjoint melds, every sequence of :func:`retrieve_joker`
calls and every sequence of :func:`lay_off` calls, in the order a turn allows them: a
seat that has not opened lays its opening (melds of its own cards reaching the
threshold) before it may retrieve a joker or lay off, and may then lay off onto its
opening's melds too (docs/rules/hand.md "Opening", "Joker retrieval").
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
from engine.hand.solver import GoOutPlan, Penalty, best_opening, can_go_out, min_penalty

# Faces near the corners of a suit (2 3 4 5 and Q K A) in three suits, both packs, and
# both jokers: small random hands then hold runs, sets, aces low and high, and wraps.
UNIVERSE = sorted(
    [hand_card_of(suit * 13 + rank, copy) for suit in range(3) for rank in (0, 1, 2, 3, 10, 11, 12)
     for copy in (0, 1)] + list(JOKERS)
)
TABLE_CHOICES: tuple[tuple[str, dict[int, int]], ...] = (
    ("3♠' 4♠' 5♠'", {}),
    ("Q♥ K♥ A♥", {}),
    ("2♣ 3♣ JK2", {105: 2 * 13 + 2}),  # JK2 = 4♣
    ("K♠ K♥ K♣", {}),
    ("5♥ 5♣ 5♦", {}),
    ("A♦ 2♦ 3♦", {}),
    ("Q♠' JK1 A♠'", {104: 11}),  # JK1 = K♠
    ("2♥' 2♦ JK1", {104: 0}),  # JK1 = 2♠: 2♠ and 2♣ take its place together
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
    return [(left, total) for left, total, _melds in _laid(cards, max_jokers)]


@cache
def _laid(
    cards: frozenset[int], max_jokers: int
) -> tuple[tuple[frozenset[int], int, tuple[Meld, ...]], ...]:
    """Every family of disjoint melds: (cards left, opening total, the melds)."""
    melds = _melds_of(cards, max_jokers)
    out: list[tuple[frozenset[int], int, tuple[Meld, ...]]] = []

    def walk(left: frozenset[int], total: int, start: int, chosen: tuple[Meld, ...]) -> None:
        out.append((left, total, chosen))
        for i in range(start, len(melds)):
            used, value, meld = melds[i]
            if used <= left:
                walk(left - used, total + value, i + 1, (*chosen, meld))

    walk(cards, 0, 0, ())
    return tuple(out)


def _lay_off_outcomes(
    left: frozenset[int], table: tuple[Meld, ...], max_jokers: int
) -> set[frozenset[int]]:
    """Every set of cards that can remain after laying off any of ``left`` in sequence."""
    return set(_lay_off_walk(left, table, max_jokers))


@cache
def _lay_off_walk(
    rest: frozenset[int], melds: tuple[Meld, ...], max_jokers: int
) -> frozenset[frozenset[int]]:
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
                results |= _lay_off_walk(rest - {card}, changed, max_jokers)
    return frozenset(results)


def assert_replays(plan: GoOutPlan | Penalty, hand: list[int], table: tuple[Meld, ...]) -> None:
    """The plan's steps are valid in their order (the opening's melds, the retrievals, the
    other melds, the lay-offs, numbered as the engine numbers melds), and each card of the
    hand and of the retrievals ends in exactly one place."""
    current = list(table)
    held = list(hand)
    opening, later = plan.melds[: plan.opening_melds], plan.melds[plan.opening_melds:]
    laid = [c for m in opening for c in m.cards]
    assert set(laid) <= set(held)
    held = [c for c in held if c not in laid]
    current += opening
    for retrieval in plan.retrievals:
        assert set(retrieval.cards) <= set(held)
        current[retrieval.meld_index], joker = retrieve_joker(
            current[retrieval.meld_index], retrieval.cards)
        assert joker == retrieval.joker
        held = [c for c in held if c not in retrieval.cards] + [joker]
    laid = [c for m in later for c in m.cards]
    assert set(laid) <= set(held)
    held = [c for c in held if c not in laid]
    current += later
    for step in plan.lay_offs:
        assert step.card in held
        current[step.meld_index] = lay_off(current[step.meld_index], step.card, step.joker_face)
        held.remove(step.card)
    left = [plan.discard] if isinstance(plan, GoOutPlan) else list(plan.left)
    assert sorted(held) == sorted(left)


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
    """The chosen table melds that share no card with the hand or one another."""
    melds = []
    taken = set(hand)
    for index in indexes:
        text, faces = TABLE_CHOICES[index]
        cards = parse_hand_cards(text)
        if not set(cards) & taken:
            melds.append(validate_meld(cards, faces))
            taken |= set(cards)
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


def _melding(
    hand: frozenset[int], table: tuple[Meld, ...], must: int | None
) -> set[frozenset[int]]:
    """Every set of cards a seat that has opened can keep: joker retrievals, new melds
    (holding ``must``), lay-offs onto ``table`` (a lay-off onto a new meld of its own is
    that meld laid larger)."""
    kept: set[frozenset[int]] = set()
    for held, melds in _retrieved(hand, table, must):
        for left, _total in _families(held, 1):
            if must is None or must not in left:
                kept |= _lay_off_outcomes(left, melds, 1)
    return kept


def _kept(
    hand: frozenset[int], table: tuple[Meld, ...], has_opened: bool, open_min: int,
    must: int | None,
) -> set[frozenset[int]]:
    """Every set of cards the seat can keep after melding (the "hand" finish aside): once
    opened, :func:`_melding`; before, an opening of one meld at least reaching
    ``open_min`` from its own cards, then :func:`_melding` on the table with the opening's
    melds, or nothing laid at all."""
    if has_opened:
        return _melding(hand, table, must)
    kept = {hand}
    for left, total, opening in _laid(hand, 1):
        if total >= max(open_min, 1):
            kept |= _melding(left, table + opening, must if must in left else None)
    return kept


def _goes_out(
    hand: frozenset[int], table: tuple[Meld, ...], has_opened: bool, open_min: int,
    must: int | None,
) -> tuple[bool, bool]:
    """(a "hand" finish exists, an ordinary finish exists), by brute force."""
    is_hand = not has_opened and any(
        len(left) == 1 and (must is None or must not in left)
        for left, _total in _families(hand, 1)
    )
    regular = any(len(left) == 1 for left in _kept(hand, table, has_opened, open_min, must))
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
    assert_replays(plan, hand, table)
    if plan.is_hand:
        assert not plan.lay_offs and not plan.retrievals
    elif not has_opened:
        opening = plan.melds[: plan.opening_melds]
        assert opening and sum(meld_value(m) for m in opening) >= open_min
    else:
        assert plan.opening_melds == 0
    # the taken discard must end in a new meld (docs/rules/hand.md "A turn" 1)
    must = hand[0]
    must_hand, must_regular = _goes_out(frozenset(hand), table, has_opened, open_min, must)
    forced = can_go_out(hand, table, has_opened=has_opened, open_min=open_min, must_use=must)
    assert (forced is not None) == (must_hand or must_regular)
    if forced is not None:
        assert_replays(forced, hand, table)
        assert any(must in m.cards for m in forced.melds)
        assert all(r.cards.count(must) == 0 for r in forced.retrievals)


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
    kept = _kept(frozenset(hand), table, has_opened, open_min, None)
    expected = min(_penalty(rest) for rest in kept if len(rest) >= keep)
    if not has_opened and keep <= 1:
        families = _families(frozenset(hand), 1)
        expected = min([expected, *(_penalty(left) for left, _ in families if len(left) == 1)])
    found = min_penalty(hand, table_melds=table, can_lay_off=can_lay, keep=keep,
                        has_opened=has_opened, open_min=open_min)
    assert found.points == expected
    assert _penalty(frozenset(found.left)) == found.points and len(found.left) >= keep
    if found.melds or found.lay_offs or found.retrievals:
        assert_replays(found, hand, table)
