"""The exact meld-search kernel behind :mod:`engine.hand.solver` (internal, int-only).

A hand is reduced to a count per face (0..51, each 0..2: the two packs' copies of a face
are interchangeable, which halves the symmetric branches) plus a number of jokers. The
search is a depth-first dynamic programme with memoisation over the remaining counts: it
always decides the lowest remaining face ``x`` (suit-major, 2..K then A), which is either
left in hand, or put in a new meld of which it is the lowest remaining face (a set with
higher suits, a run upwards, jokers below it), or laid off onto a table meld (with the
chain of cards that links it to the meld's end). Every meld containing ``x`` is tried, so
the answer is exact (no node limit); the memo makes identical sub-hands cost once. A
joker may also take a natural's place in a meld (the natural then serves elsewhere, or a
cheaper card stays in hand than the joker's 15 penalty points).

Branch and bound on top (fail-low alpha, as in game-tree search): a branch whose bound
(every remaining card melded, less the cheapest cards that must stay; for an opening
without table melds, every remaining card that is still alive, :func:`~engine.hand.
screens.alive_of_faces`, and with a single joker :func:`~engine.hand.screens.
one_joker_bound`) cannot beat the best plan found is cut, and its memo entry is marked
as an upper bound, never as exact. Without table melds, the cards still alive also tell
when the required card can no longer be melded, when going out would leave two cards,
and when nothing left can be melded at all (the rest is then left in hand at once). The
choices are tried heaviest first so that good plans come early; without table melds they
depend only on a few cards around the face decided, and are listed once for every search
(:data:`_CHOICES`). None of this changes the plan found: the first best one in that order.

Positions of a run: 0 the low ace, rank+1 for 2..K, 13 the high ace (never both).

.. warning:: internal: inputs are trusted, nothing is validated here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import combinations
from typing import Final

from engine.hand._cores import meld_cores
from engine.hand.screens import alive_of_faces, one_joker_bound, opening_value

FACES: Final = 52
RANKS: Final = 13
ACE: Final = 12
HIGH: Final = 13
NEG: Final = -(10**9)
"""The value of an infeasible branch."""

Choice = tuple[int, ...]
"""A memoised decision: ``(LEAVE,)``, ``(MELD, j, *faces)``, ``(LAY, t, j, low, high,
*faces)`` (``low``/``high`` the run's new ends, 0 for a set) or ``(CORE, j, mask, value,
*faces)`` (a new meld laid as its core, ``mask`` of the faces, worth ``value`` in the
opening, and the rest after the joker retrievals: :mod:`engine.hand._cores`); ``j`` is
how many of the trailing faces jokers stand for (naturals first)."""
Table = tuple[tuple[tuple[int, int, int], ...], tuple[tuple[int, int, int], ...], int, int]
"""The table melds' changing part: runs ``(low, high, jokers)``, sets ``(suits, jokers,
size)``; the opening value of the new melds so far, capped at ``open_floor`` (0 when the
search has no opening floor); and how many of the jokers left were retrieved this turn
while they still count for nothing (``Search.uncounted_jokers``; 0 once the floor is
reached)."""
LEAVE: Final = 0
MELD: Final = 1
LAY: Final = 2
CORE: Final = 3


def _by_weight(option: tuple[Choice, int]) -> int:
    return option[1]


def _opening_value(faces: tuple[int, ...], ace_low_value: int) -> int:
    """The opening value of a new meld of ``faces``: the ace of a run holding a 2 is the
    low ace of A-2-3 (``ace_low_value``), every other ace 11."""
    total = sum(opening_points(f % RANKS) for f in faces)
    ranks = {f % RANKS for f in faces}
    if ACE in ranks and 0 in ranks:
        total -= 11 - ace_low_value
    return total


_EVEN_BITS: Final = int("01" * FACES, 2)
"""Bit ``2 * face`` of every face: where a packed count (2 bits a face) starts."""
_SUIT_SPAN: Final = 2 * RANKS


def _lowest_rank(key: int) -> int:
    """The lowest rank (2 first, the ace last) held in the packed counts ``key``."""
    held = (key | key >> 1) & _EVEN_BITS
    ranks = (held | held >> _SUIT_SPAN | held >> 2 * _SUIT_SPAN | held >> 3 * _SUIT_SPAN) & (
        (1 << _SUIT_SPAN) - 1
    )
    return ((ranks & -ranks).bit_length() - 1) >> 1


def _spread(bits: int) -> int:
    """``bits`` with bit ``i`` moved to bit ``2 * i``."""
    return sum(1 << 2 * i for i in range(bits.bit_length()) if bits >> i & 1)


_SPREAD: Final = tuple(_spread(bits) for bits in range(1 << RANKS))
""":func:`_spread` of every suit mask."""


def _packed(faces: int) -> int:
    """The packed counts (2 bits a face) of one copy of each face of ``faces``."""
    return (
        _SPREAD[faces & _SUIT_MASK]
        | _SPREAD[faces >> RANKS & _SUIT_MASK] << _SUIT_SPAN
        | _SPREAD[faces >> 2 * RANKS & _SUIT_MASK] << 2 * _SUIT_SPAN
        | _SPREAD[faces >> 3 * RANKS] << 3 * _SUIT_SPAN
    )


_SUIT_MASK: Final = (1 << RANKS) - 1
_ABOVE: Final = tuple((1 << 2 * (ACE - rank)) - 1 for rank in range(RANKS))
"""For x of each rank, the packed counts of its suit's faces above it."""
_ACE_ABOVE: Final = tuple(
    1 << 2 * (ACE - rank - 1) if rank != ACE else 0 for rank in range(RANKS)
)
"""For x of each rank, where its suit's ace sits in :data:`_ABOVE`'s packed counts."""
_ODD_BITS: Final = _EVEN_BITS << 1
_CHOICES: dict[tuple[object, ...], dict[tuple[int, ...], tuple[tuple[Choice, int], ...]]] = {}
"""The ordered choices without table melds, by how a search weighs them (mode, ace-low
value, joker penalty, joker limit), then by shape (see :meth:`Search._shared_choices`)."""
_CHOICES_SIZE: Final = 1 << 14
"""Shapes kept per weighing before the cache starts afresh."""


def _reach_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape of :meth:`Search._shared_choices` keeping, of the cards above x, only those
    a run upwards can reach (below the ``budget + 1``-th face missing) and the ace (the
    low ace of A-2-3): every shape with the same reach lists the same choices."""
    x, above, higher, budget, may_leave = shape
    # With the odd bits set, the faces held in a row above x are a row of ones: fill
    # ``budget`` holes, and the ones trailing after that are the stretch a run can reach.
    filled = above | _ODD_BITS
    for _ in range(budget):
        filled |= filled + 1
    reached = above & ((filled ^ (filled + 1)) >> 1 | _ACE_ABOVE[x % RANKS])
    return (x, reached, higher, budget, may_leave)


def face_at(suit: int, position: int) -> int:
    """The face at a run position of ``suit``."""
    return suit * RANKS + (ACE if position in (0, HIGH) else position - 1)


def opening_points(rank: int) -> int:
    """Opening value of a rank outside the low ace: 2-10, J/Q/K 10, A 11."""
    return 11 if rank == ACE else min(rank + 2, 10)


_FACE_VALUES: Final = tuple(opening_points(face % RANKS) for face in range(FACES))
""":func:`opening_points` of every face (the ace 11)."""


@cache
def _face_points(top_ace: int) -> tuple[int, ...]:
    """The search's bound weight of every face: its value, the ace ``top_ace`` (all 0
    when ``top_ace`` is 0: a search that weighs nothing)."""
    if not top_ace:
        return (0,) * FACES
    return tuple(top_ace if face % RANKS == ACE else _FACE_VALUES[face] for face in range(FACES))


@dataclass(slots=True)
class TableRun:
    """A table run as the search sees it: suit, end positions, jokers already in it."""

    suit: int
    low: int
    high: int
    jokers: int


@dataclass(slots=True)
class TableSet:
    """A table set: rank, suits present (mask), jokers, size."""

    rank: int
    suits: int
    jokers: int
    size: int


@dataclass(slots=True)
class Search:
    """One search problem. ``mode`` weights: ``"open"`` (opening values of new melds),
    ``"penalty"`` (penalty values removed from hand, melds and lay-offs), ``"none"``
    (feasibility only). ``exact_left`` asks for exactly one card left (going out);
    otherwise at least ``keep`` cards are left."""

    counts: list[int]
    jokers: int
    mode: str
    max_jokers: int
    ace_low_value: int
    joker_penalty: int
    keep: int
    exact_left: bool
    runs: list[TableRun]
    sets: list[TableSet]
    spare_joker_room: int
    """Jokers the table melds outside ``runs``/``sets`` can still take (lay-off)."""
    required_face: int = -1
    required_joker: bool = False
    open_floor: int = 0
    """When above 0: a plan is feasible only if its new melds' opening values (A-2-3's ace
    at ``ace_low_value``, a joker at its face) reach it (an unopened seat's threshold)."""
    uncounted_jokers: int = 0
    """How many of ``jokers`` the seat retrieved from the table this turn, before opening:
    they come after the opening, so in the opening values (``mode == "open"``, or below
    ``open_floor``) a new meld holding one counts only its core (:mod:`engine.hand._cores`).
    Jokers are alike otherwise, so the search follows only how many retrieved ones are
    left (a joker in no core is taken from them first). Ignored when nothing counts."""
    memo: dict[tuple[object, ...], tuple[int, Choice | None, bool]] = field(
        default_factory=dict)
    """State -> (value, best choice, whether the value is exact or an upper bound)."""
    key: int = 0
    """The counts packed 2 bits per face: the memo key of the remaining naturals."""
    points: int = 0
    """The weight of the remaining naturals if all were melded (the search's bound)."""
    face_points: tuple[int, ...] = ()
    joker_bound: int = 0
    present: int = 0
    """The faces (52-bit mask) of the remaining naturals (read off ``counts`` unless the
    caller gives it, with ``twins``)."""
    twins: int = 0
    """The faces of which both copies remain."""
    live_bound: bool = False
    """Whether :meth:`best` also bounds by the remaining cards that are still alive (an
    opening without table melds: a new meld is made of alive cards only)."""
    track_faces: bool = False
    """Whether ``present`` and ``twins`` follow the search, for :meth:`best` to read the
    remaining cards that are still alive: without table melds, for the live bound, and for
    what must be melded (the required face; all cards but one when going out)."""
    shared_choices: dict[tuple[int, ...], tuple[tuple[Choice, int], ...]] = field(
        default_factory=dict)
    """The ordered choices by the shape they depend on (see :meth:`_shared_choices`),
    shared by every search weighing alike."""

    def __post_init__(self) -> None:
        present, twins = self.present, self.twins
        if not present:  # not given by the caller: read them off the counts
            for face, count in enumerate(self.counts):
                if count:
                    present |= 1 << face
                    if count > 1:
                        twins |= 1 << face
            self.present, self.twins = present, twins
        self.key = _packed(present) + _packed(twins)
        # the most a card can add: its value, the ace as the better of high and low
        top_ace = max(11, self.ace_low_value) if self.mode == "open" else 11
        weighted = self.mode in ("open", "penalty")
        self.face_points = _face_points(top_ace if weighted else 0)
        self.points = opening_value(present, twins, top_ace) if weighted else 0
        self.joker_bound = {"open": top_ace, "penalty": self.joker_penalty}.get(self.mode, 0)
        no_table = not self.runs and not self.sets
        self.live_bound = self.mode == "open" and no_table
        self.track_faces = no_table and (
            self.live_bound or self.exact_left or self.required_face >= 0
        )
        if self.mode != "open" and not self.open_floor:
            self.uncounted_jokers = 0  # nothing counts: a retrieved joker is any joker
        weighs = (self.mode, self.ace_low_value if self.mode == "open" else 0,
                  self.joker_penalty if self.mode == "penalty" else 0, self.max_jokers)
        self.shared_choices = _CHOICES.setdefault(weighs, {})

    # ---- weights ----
    def _meld_weight(self, faces: tuple[int, ...], joker_count: int, ace_low: bool) -> int:
        if self.mode == "open":
            total = sum([_FACE_VALUES[f] for f in faces])
            return total - (11 - self.ace_low_value if ace_low else 0)
        if self.mode == "penalty":
            natural = faces[: len(faces) - joker_count]
            return sum([_FACE_VALUES[f] for f in natural]) + (
                joker_count * self.joker_penalty
            )
        return 0

    def _lay_weight(self, faces: tuple[int, ...], joker_count: int) -> int:
        return self._meld_weight(faces, joker_count, False) if self.mode == "penalty" else 0

    # ---- the end of the hand's naturals: what is left are jokers ----
    def joker_room(self, table: Table) -> int:
        room = self.spare_joker_room
        for low, high, jokers in table[0]:
            room += max(0, min(self.max_jokers - jokers, HIGH - (high - low + 1)))
        for _suits, jokers, size in table[1]:
            room += max(0, min(self.max_jokers - jokers, 4 - size))
        return room

    def end_value(
        self, jokers: int, left: int, table: Table,
        required_joker: bool,
    ) -> tuple[int, int]:
        """(value, jokers laid off) once every natural is decided."""
        if required_joker or (self.open_floor and table[2] < self.open_floor):
            return NEG, 0
        if self.exact_left:
            laid = left + jokers - 1
            if laid < 0 or laid > jokers or laid > self.joker_room(table):
                return NEG, 0
            return laid * (self.joker_penalty if self.mode == "penalty" else 0), laid
        if left + jokers < self.keep:
            return NEG, 0
        if self.mode != "penalty":
            return 0, 0
        laid = min(jokers, self.joker_room(table), left + jokers - self.keep)
        return laid * self.joker_penalty, laid

    # ---- the search ----
    def start_table(self) -> Table:
        return (
            tuple((r.low, r.high, r.jokers) for r in self.runs),
            tuple((s.suits, s.jokers, s.size) for s in self.sets),
            0,
            self.uncounted_jokers,
        )

    def solve(self, left: int = 0, floor: int = NEG + 1) -> int:
        """The best value, ``left`` cards already left out; below ``floor`` (or ``NEG``
        when infeasible) only an upper bound is known and no plan is kept."""
        return self.best(0, self.jokers, left, self.start_table(), self.required_face >= 0,
                         self.required_joker, floor - 1)

    def best(
        self, start: int, jokers: int, left: int,
        table: Table, need_face: bool, need_joker: bool, alpha: int = NEG,
    ) -> int:
        """The best value from this state: exact when above ``alpha``, otherwise an upper
        bound at most ``alpha``."""
        counts = self.counts
        rest = self.key >> 2 * start  # the packed counts from ``start`` on: x is the lowest
        if not rest:
            if need_face:
                return NEG
            return self.end_value(jokers, left, table, need_joker)[0]
        x = start + ((rest & -rest).bit_length() - 1 >> 1)
        memo_key = (self.key, jokers, left, table, need_face, need_joker)
        hit = self.memo.get(memo_key)
        if hit is not None and (hit[2] or hit[0] <= alpha):
            return hit[0]
        # Branch and bound (fail-low alpha): a value <= alpha is only an upper bound, and
        # is memoised as such; a value > alpha is exact. The bound: every card melded.
        bound = self.points + jokers * self.joker_bound
        to_leave = (1 if self.exact_left else self.keep) - left
        if to_leave > 0 and self.joker_bound:  # the cards still to leave are never melded
            # A face weighs by its rank alone, the higher the rank the more (the ace most):
            # the cheapest card held is one of the lowest rank.
            cheapest = self.face_points[_lowest_rank(self.key)]
            bound -= to_leave * min(cheapest, self.joker_bound)
        if bound <= alpha:
            return bound
        if self.track_faces:
            # Without table melds, a new meld holds only naturals still alive among the
            # remaining cards (screens.alive_of_faces); every other one stays in hand.
            alive = alive_of_faces(self.present, jokers, self.max_jokers)
            if need_face and not alive >> self.required_face & 1:
                return NEG
            if self.exact_left:  # going out leaves one card: one dead card at most
                dead = self.present & ~alive
                if left + dead.bit_count() + (self.twins & dead).bit_count() > 1:
                    return NEG
            if not alive and not jokers:
                # No card left can join a meld: each is left in hand in turn, the only
                # choice there is, to the end (settled here, unmemoised: see solver._walk).
                count = self.present.bit_count() + self.twins.bit_count()
                left = left + count if self.exact_left else min(self.keep, left + count)
                return self.end_value(0, left, table, need_joker)[0]
        if self.live_bound:
            # Tighter: the opening values of the alive cards only.
            live = opening_value(alive, self.twins & alive, self.joker_bound)
            live += jokers * self.joker_bound
            if live <= alpha:
                return live
            if jokers == 1 and self.max_jokers == 1:
                # Tighter still with a single joker (screens.one_joker_bound).
                live = one_joker_bound(self.present, self.twins, alive, self.joker_bound)
                if live <= alpha:
                    return live
        best_value, best_choice = NEG, None
        options: Sequence[tuple[Choice, int]]
        if table[0] or table[1]:
            listed = self.choices(x, jokers, left, table, need_face)
            if self.mode != "none":  # feasibility weighs nothing: keep the listed order
                listed.sort(key=_by_weight, reverse=True)  # good plans first: tighter alphas
            options = listed
        else:
            options = self._shared_choices(x, jokers, left)
        if table[3]:  # retrieved jokers that count for nothing: new melds by their cores
            options = self._with_cores(options, jokers, table[3], need_face, need_joker)
        required = self.required_face
        for choice, weight in options:
            child_alpha = (alpha if alpha > best_value else best_value) - weight
            kind = choice[0]
            if kind >= LAY:  # a lay-off, or a meld by its core
                value = self._follow(
                    x, choice, weight, jokers, left, table, need_face, need_joker, child_alpha)
            else:
                # What apply, best and restore do for a new meld or a card left, inline:
                # this loop is the search's hottest.
                n_jokers, n_left, n_table = jokers, left, table
                n_face, n_joker = need_face, need_joker
                if kind == LEAVE:
                    removed: tuple[int, ...] = (x,)
                    n_left = 1 + left if self.exact_left else min(self.keep, left + 1)
                else:
                    used = choice[1]
                    removed = choice[2 : len(choice) - used]
                    if used:
                        n_jokers -= used
                        n_joker = False
                    if n_face and required in removed:
                        n_face = False
                    floor = self.open_floor
                    if floor and table[2] < floor:
                        opened = table[2] + _opening_value(choice[2:], self.ace_low_value)
                        n_table = (
                            (table[0], table[1], opened, table[3]) if opened < floor
                            else (table[0], table[1], floor, 0)
                        )
                self._take(removed)
                if n_face and counts[required] == 0:
                    value = NEG  # the required face's last copy left the hand unmelded
                else:
                    value = self.best(x, n_jokers, n_left, n_table, n_face, n_joker, child_alpha)
                    value = value + weight if value > NEG else NEG
                self.restore(removed)
            if value > best_value:
                best_value, best_choice = value, choice
                if self.mode == "none":
                    break  # feasibility: the first plan found is as good as any
        self.memo[memo_key] = (best_value, best_choice, best_value > alpha)
        return best_value

    def apply(
        self, x: int, choice: Choice, jokers: int, left: int,
        table: Table, need_face: bool, need_joker: bool,
    ) -> tuple[int, int, Table, bool, bool, list[int], bool]:
        """The state after ``choice``, the faces it removed from the counts (the caller
        restores them with :meth:`restore`), and whether the required face was lost
        (its last copy left the hand outside a new meld)."""
        jokers, left, table, need_face, need_joker, removed = self.step(
            x, choice, jokers, left, table, need_face, need_joker)
        self._take(removed)
        lost = need_face and self.counts[self.required_face] == 0
        return jokers, left, table, need_face, need_joker, removed, lost

    def step(
        self, x: int, choice: Choice, jokers: int, left: int,
        table: Table, need_face: bool, need_joker: bool,
    ) -> tuple[int, int, Table, bool, bool, list[int]]:
        """:meth:`apply` without touching the counts: the state after ``choice`` and the
        faces it takes out of them."""
        removed: list[int] = []
        if choice[0] == LEAVE:
            removed.append(x)
            left = 1 + left if self.exact_left else min(self.keep, left + 1)
        elif choice[0] == MELD:
            used_jokers = choice[1]
            faces = choice[2:]
            removed.extend(faces[: len(faces) - used_jokers])
            jokers -= used_jokers
            if used_jokers:
                need_joker = False
            if self.required_face in removed:
                need_face = False
            if self.open_floor and table[2] < self.open_floor:
                table = self._opened(table, _opening_value(faces, self.ace_low_value), table[3])
        elif choice[0] == CORE:
            used_jokers, mask, value = choice[1], choice[2], choice[3]
            faces = choice[4:]
            removed.extend(faces[: len(faces) - used_jokers])
            # The core's jokers are the seat's own (the taken joker among them, if this
            # meld holds it); every other one is a retrieved joker while any is left.
            own = (mask >> (len(faces) - used_jokers)).bit_count()
            if need_joker and used_jokers:
                own = max(own, 1)
                need_joker = False
            uncounted = table[3] - min(used_jokers - own, table[3])
            jokers -= used_jokers
            if self.required_face in removed:
                need_face = False
            if self.open_floor:
                table = self._opened(table, value, uncounted)
            else:
                table = (table[0], table[1], table[2], uncounted)
        else:
            t, used_jokers = choice[1], choice[2]
            faces = choice[5:]
            removed.extend(faces[: len(faces) - used_jokers])
            jokers -= used_jokers
            table = self._extend(table, t, choice[3], choice[4], faces[0], used_jokers)
        return jokers, left, table, need_face, need_joker, removed

    def _take(self, removed: Sequence[int]) -> None:
        """Take the naturals of ``removed`` (one copy per entry) out of the counts."""
        counts = self.counts
        for face in removed:
            count = counts[face] - 1
            counts[face] = count
            self.key -= 1 << (2 * face)
            self.points -= self.face_points[face]
            if self.track_faces:  # the masks best reads
                if count:
                    self.twins ^= 1 << face
                else:
                    self.present ^= 1 << face

    def restore(self, removed: Sequence[int]) -> None:
        counts = self.counts
        for face in removed:
            count = counts[face] + 1
            counts[face] = count
            self.key += 1 << (2 * face)
            self.points += self.face_points[face]
            if self.track_faces:
                if count > 1:
                    self.twins |= 1 << face
                else:
                    self.present |= 1 << face

    def _follow(
        self, x: int, choice: Choice, weight: int, jokers: int, left: int,
        table: Table, need_face: bool, need_joker: bool, alpha: int,
    ) -> int:
        state = self.apply(x, choice, jokers, left, table, need_face, need_joker)
        n_jokers, n_left, n_table, n_face, n_joker, removed, lost = state
        if lost:
            value = NEG
        else:
            value = self.best(x, n_jokers, n_left, n_table, n_face, n_joker, alpha)
            value = value + weight if value > NEG else NEG
        self.restore(removed)
        return value

    def _opened(self, table: Table, value: int, uncounted: int) -> Table:
        """``table`` after a new meld worth ``value`` in the opening, ``uncounted``
        retrieved jokers left (forgotten once the floor is reached: nothing counts then)."""
        opened = table[2] + value
        if opened < self.open_floor:
            return (table[0], table[1], opened, uncounted)
        return (table[0], table[1], self.open_floor, 0)

    def _extend(
        self, table: Table, t: int, low: int, high: int, face: int, used_jokers: int
    ) -> Table:
        runs, sets, opened, uncounted = table
        uncounted -= min(used_jokers, uncounted)  # a lay-off's jokers count for nothing
        if t < len(runs):
            new_runs = list(runs)
            new_runs[t] = (low, high, runs[t][2] + used_jokers)
            return (tuple(new_runs), sets, opened, uncounted)
        index = t - len(runs)
        suits, jokers, size = sets[index]
        new_sets = list(sets)
        new_sets[index] = (suits | (1 << (face // RANKS)), jokers + used_jokers, size + 1)
        return (runs, tuple(new_sets), opened, uncounted)

    def _with_cores(
        self, options: Sequence[tuple[Choice, int]], jokers: int, uncounted: int,
        need_face: bool, need_joker: bool,
    ) -> list[tuple[Choice, int]]:
        """``options`` with each new meld holding jokers listed by its cores instead
        (:func:`~engine.hand._cores.meld_cores`), those the seat's own jokers allow: while
        retrieved jokers count for nothing, what a meld is worth in the opening depends on
        which part of it is laid with the opening."""
        own = jokers - uncounted
        listed: list[tuple[Choice, int]] = []
        for choice, weight in options:
            used = choice[1] if choice[0] == MELD else 0
            if not used:
                listed.append((choice, weight))
                continue
            faces = choice[2:]
            required = (
                self.required_face
                if need_face and self.required_face in faces[: len(faces) - used] else -1
            )
            for mask, held, value in meld_cores(
                faces, used, self.ace_low_value, required, need_joker
            ):
                if max(held, 1 if need_joker else 0) <= own:
                    listed.append((
                        (CORE, used, mask, value, *faces),
                        value if self.mode == "open" else weight,
                    ))
        if self.mode != "none":
            listed.sort(key=_by_weight, reverse=True)
        return listed

    # ---- the choices for the lowest remaining face x ----
    def _shared_choices(self, x: int, jokers: int, left: int) -> Sequence[tuple[Choice, int]]:
        """:meth:`choices` without table melds, heaviest first, read from :data:`_CHOICES`.
        Without table melds the choices for x depend only on the cards of x's suit above
        it, x's rank in the higher suits, the joker budget and whether a card may still be
        left; hands a turn apart share most of these, searches too. Only whether a face
        is held counts (the listing never asks how many copies), so the shape keeps one bit
        of each face's count: hands that differ by a second copy share their listing.
        Of the cards above x, a run upwards reads only those below the ``budget + 1``-th
        face missing (each hole before it takes a joker), and the ace (the low ace of
        A-2-3): a shape not seen yet is looked up by these only (:meth:`_reach_shape`),
        so that hands differing higher up share their listing too."""
        key = self.key
        key = (key | key >> 1) & _EVEN_BITS
        budget = min(jokers, self.max_jokers)
        shape = (
            x,
            key >> (2 * x + 2) & _ABOVE[x % RANKS],
            key >> (2 * x + 2 * RANKS) & 1
            | (key >> (2 * x + 4 * RANKS) & 1) << 1
            | (key >> (2 * x + 6 * RANKS) & 1) << 2,
            budget,
            not self.exact_left or left == 0,
        )
        shared = self.shared_choices
        found = shared.get(shape)
        if found is None:
            reached = _reach_shape(shape)
            found = shared.get(reached)
            if found is None:
                listed = self.choices(x, jokers, left, ((), (), 0, 0), False)
                if self.mode != "none":
                    listed.sort(key=_by_weight, reverse=True)
                # Tuples of ints only: the garbage collector soon stops tracking them, so
                # a large cache does not lengthen its passes.
                found = tuple(listed)
            if len(shared) >= _CHOICES_SIZE:
                shared.clear()
            shared[reached] = shared[shape] = found
        return found

    def choices(
        self, x: int, jokers: int, left: int,
        table: Table, need_face: bool,
    ) -> list[tuple[Choice, int]]:
        out: list[tuple[Choice, int]] = []
        budget = min(jokers, self.max_jokers)
        self._set_choices(x, budget, out)
        if x % RANKS != ACE:
            self._run_choices(x, budget, out)
        if table[0] or table[1]:
            self._lay_choices(x, jokers, table, out)
        if not self.exact_left or left == 0:
            out.append(((LEAVE,), 0))
        return out

    def _set_choices(self, x: int, budget: int, out: list[tuple[Choice, int]]) -> None:
        counts = self.counts
        suit, rank = divmod(x, RANKS)
        others = [t * RANKS + rank for t in range(suit + 1, 4) if counts[t * RANKS + rank]]
        if len(others) + budget < 2:
            return  # a set holds 3 cards at least
        for size in range(1, len(others) + 1):
            for partners in combinations(others, size):
                naturals = (x, *partners)
                present = {f // RANKS for f in naturals}
                missing = [s * RANKS + rank for s in range(4) if s not in present]
                for joker_count in range(0, min(budget, 4 - len(naturals)) + 1):
                    if len(naturals) + joker_count < 3:
                        continue
                    faces = (*naturals, *missing[:joker_count])
                    out.append(((MELD, joker_count, *faces),
                                self._meld_weight(faces, joker_count, False)))

    def _runs_through(
        self, suit: int, p: int, budget: int, lowest_allowed: int, highest_allowed: int,
        min_length: int = 3,
    ) -> list[tuple[int, int, list[int], list[int]]]:
        """Runs [a..b] of ``suit`` through position ``p`` (x there): positions below ``p``
        hold jokers or the ace at 0; above, naturals when the hand has them, else jokers.
        Returns (a, b, natural positions, joker positions) with substitution variants."""
        counts = self.counts
        ace_count = counts[suit * RANKS + ACE]
        runs: list[tuple[int, int, list[int], list[int]]] = []
        below_holes = 0
        for a in range(p, lowest_allowed - 1, -1):
            if a < p and not (a == 0 and ace_count and p != 0):
                below_holes += 1
            if below_holes > budget:
                break
            holes = below_holes
            for b in range(max(p, a), highest_allowed + 1):
                if a == 0 and b == HIGH:
                    break
                if b > p:
                    has = ace_count if b == HIGH else counts[suit * RANKS + b - 1]
                    if not has:
                        holes += 1
                if holes > budget:
                    break
                if b - a + 1 < min_length:
                    continue
                naturals: list[int] = []
                jokers: list[int] = []
                for q in range(a, b + 1):
                    if q == p:
                        naturals.append(q)
                    elif q < p:
                        (naturals if q == 0 and ace_count and p != 0 else jokers).append(q)
                    else:
                        has = ace_count if q == HIGH else counts[suit * RANKS + q - 1]
                        (naturals if has else jokers).append(q)
                runs.append((a, b, naturals, jokers))
                spare = budget - len(jokers)
                others = [q for q in naturals if q != p]
                for extra in range(1, spare + 1):
                    for swapped in combinations(others, extra):
                        kept = [q for q in naturals if q not in swapped]
                        runs.append((a, b, kept, sorted(jokers + list(swapped))))
        return runs

    def _run_choices(self, x: int, budget: int, out: list[tuple[Choice, int]]) -> None:
        suit, rank = divmod(x, RANKS)
        # A run holds another natural of the suit with at most ``budget`` holes (jokers)
        # between it and x: above x, or the low ace below it. Without one, skip the listing.
        counts, base = self.counts, suit * RANKS
        above = range(rank + 1, min(rank + 1 + budget, ACE) + 1)
        if (not counts[base + ACE] or rank > budget) and not any(counts[base + r] for r in above):
            return
        for a, b, naturals, jokers in self._runs_through(suit, rank + 1, budget, 0, HIGH):
            if len(naturals) < 2 or b - a + 1 < 3:
                continue
            faces = tuple(face_at(suit, q) for q in naturals + jokers)
            weight = self._meld_weight(faces, len(jokers), a == 0)
            out.append(((MELD, len(jokers), *faces), weight))

    def _lay_choices(
        self, x: int, jokers: int, table: Table,
        out: list[tuple[Choice, int]],
    ) -> None:
        suit, rank = divmod(x, RANKS)
        runs, sets = table[0], table[1]
        for t, (low, high, in_meld) in enumerate(runs):
            if self.runs[t].suit != suit:
                continue
            budget = min(jokers, self.max_jokers - in_meld)
            positions = [0, HIGH] if rank == ACE else [rank + 1]
            for p in positions:
                if p < low:  # a chain [a..low-1] through p
                    lowest = 0 if high < HIGH else 1
                    chains = [c for c in self._runs_through(suit, p, budget, lowest, low - 1, 1)
                              if c[1] == low - 1]
                elif p > high:  # a chain [high+1..b] through p
                    lowest_ok = high + 1
                    top = HIGH if low > 0 else HIGH - 1
                    chains = [
                        c for c in self._runs_through(suit, p, budget, lowest_ok, top, 1)
                        if c[0] == high + 1
                    ]
                else:
                    continue
                for a, b, naturals, joker_positions in chains:
                    faces = tuple(face_at(suit, q) for q in naturals + joker_positions)
                    new_low, new_high = min(a, low), max(b, high)
                    out.append(((LAY, t, len(joker_positions), new_low, new_high, *faces),
                                self._lay_weight(faces, len(joker_positions))))
        for index, (suits, _in_meld, size) in enumerate(sets):
            table_set = self.sets[index]
            if table_set.rank == rank and size < 4 and not suits >> suit & 1:
                faces = (x,)
                out.append(((LAY, len(runs) + index, 0, 0, 0, *faces),
                            self._lay_weight(faces, 0)))
