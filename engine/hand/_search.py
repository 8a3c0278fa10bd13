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
(every remaining card melded, less the cheapest cards that must stay) cannot beat the best
plan found is cut, and its memo entry is marked as an upper bound, never as exact. The
choices are tried heaviest first so that good plans come early.

Positions of a run: 0 the low ace, rank+1 for 2..K, 13 the high ace (never both).

.. warning:: internal: inputs are trusted, nothing is validated here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Final

FACES: Final = 52
RANKS: Final = 13
ACE: Final = 12
HIGH: Final = 13
NEG: Final = -(10**9)
"""The value of an infeasible branch."""

Choice = tuple[int, ...]
"""A memoised decision: ``(LEAVE,)``, ``(MELD, j, *faces)`` or ``(LAY, t, j, low, high,
*faces)`` (``low``/``high`` the run's new ends, 0 for a set); ``j`` is how many of the
trailing faces jokers stand for (naturals first)."""
Table = tuple[tuple[tuple[int, int, int], ...], tuple[tuple[int, int, int], ...]]
"""The table melds' changing part: runs ``(low, high, jokers)``, sets ``(suits, jokers,
size)``."""
LEAVE: Final = 0
MELD: Final = 1
LAY: Final = 2


def _by_weight(option: tuple[Choice, int]) -> int:
    return option[1]


def face_at(suit: int, position: int) -> int:
    """The face at a run position of ``suit``."""
    return suit * RANKS + (ACE if position in (0, HIGH) else position - 1)


def opening_points(rank: int) -> int:
    """Opening value of a rank outside the low ace: 2-10, J/Q/K 10, A 11."""
    return 11 if rank == ACE else min(rank + 2, 10)


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
    memo: dict[tuple[object, ...], tuple[int, Choice | None, bool]] = field(
        default_factory=dict)
    """State -> (value, best choice, whether the value is exact or an upper bound)."""
    key: int = 0
    """The counts packed 2 bits per face: the memo key of the remaining naturals."""
    points: int = 0
    """The weight of the remaining naturals if all were melded (the search's bound)."""
    face_points: tuple[int, ...] = ()
    joker_bound: int = 0

    def __post_init__(self) -> None:
        self.key = sum(c << (2 * f) for f, c in enumerate(self.counts))
        # the most a card can add: its value, the ace as the better of high and low
        top_ace = max(11, self.ace_low_value) if self.mode == "open" else 11
        weighted = self.mode in ("open", "penalty")
        self.face_points = tuple(
            (top_ace if f % RANKS == ACE else opening_points(f % RANKS)) if weighted else 0
            for f in range(FACES))
        self.points = sum(c * p for c, p in zip(self.counts, self.face_points, strict=True))
        self.joker_bound = {"open": top_ace, "penalty": self.joker_penalty}.get(self.mode, 0)

    # ---- weights ----
    def _meld_weight(self, faces: tuple[int, ...], joker_count: int, ace_low: bool) -> int:
        if self.mode == "open":
            total = sum(opening_points(f % RANKS) for f in faces)
            return total - (11 - self.ace_low_value if ace_low else 0)
        if self.mode == "penalty":
            natural = faces[: len(faces) - joker_count]
            return sum(opening_points(f % RANKS) for f in natural) + (
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
        if required_joker:
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
        x = start
        while x < FACES and counts[x] == 0:
            x += 1
        if x == FACES:
            if need_face:
                return NEG
            return self.end_value(jokers, left, table, need_joker)[0]
        memo_key = (self.key, jokers, left, table, need_face, need_joker)
        hit = self.memo.get(memo_key)
        if hit is not None and (hit[2] or hit[0] <= alpha):
            return hit[0]
        # Branch and bound (fail-low alpha): a value <= alpha is only an upper bound, and
        # is memoised as such; a value > alpha is exact. The bound: every card melded.
        bound = self.points + jokers * self.joker_bound
        to_leave = (1 if self.exact_left else self.keep) - left
        if to_leave > 0 and self.joker_bound:  # the cards still to leave are never melded
            cheapest = min(self.face_points[f] for f in range(x, FACES) if counts[f])
            bound -= to_leave * min(cheapest, self.joker_bound)
        if bound <= alpha:
            return bound
        best_value, best_choice = NEG, None
        options = self.choices(x, jokers, left, table, need_face)
        options.sort(key=_by_weight, reverse=True)  # good plans first: tighter alphas
        for choice, weight in options:
            child_alpha = (alpha if alpha > best_value else best_value) - weight
            value = self._follow(
                x, choice, weight, jokers, left, table, need_face, need_joker, child_alpha)
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
        else:
            t, used_jokers = choice[1], choice[2]
            faces = choice[5:]
            removed.extend(faces[: len(faces) - used_jokers])
            jokers -= used_jokers
            table = self._extend(table, t, choice[3], choice[4], faces[0], used_jokers)
        for face in removed:
            self.counts[face] -= 1
            self.key -= 1 << (2 * face)
            self.points -= self.face_points[face]
        lost = need_face and self.counts[self.required_face] == 0
        return jokers, left, table, need_face, need_joker, removed, lost

    def restore(self, removed: list[int]) -> None:
        for face in removed:
            self.counts[face] += 1
            self.key += 1 << (2 * face)
            self.points += self.face_points[face]

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

    def _extend(
        self, table: Table, t: int, low: int, high: int, face: int, used_jokers: int
    ) -> Table:
        runs, sets = table
        if t < len(runs):
            new_runs = list(runs)
            new_runs[t] = (low, high, runs[t][2] + used_jokers)
            return (tuple(new_runs), sets)
        index = t - len(runs)
        suits, jokers, size = sets[index]
        new_sets = list(sets)
        new_sets[index] = (suits | (1 << (face // RANKS)), jokers + used_jokers, size + 1)
        return (runs, tuple(new_sets))

    # ---- the choices for the lowest remaining face x ----
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
        runs, sets = table
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
