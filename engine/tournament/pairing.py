"""Who sits with whom: Swiss grouping without rematches, knockout and round-1 folds, the
round-robin schedule. Pure functions of orders and histories; randomness is the caller's.

A *group* is the entrants of one table (``size`` of them; a partial group is completed with
bots by the caller). Orders are lists of entrant ids, best first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

SEARCH_BUDGET: Final = 200_000
"""Placements the rematch-free search may try before settling for the fewest rematches.
Enough to search a small field exhaustively; a large field rarely backtracks at all."""

QUICK_BUDGET: Final = 20_000
"""Placements of the first try in each direction (see :func:`group_swiss`)."""

_EMPTY: Final[frozenset[str]] = frozenset()


def slide(order: Sequence[str], size: int) -> list[tuple[str, ...]]:
    """Swiss round 1: cut ``order`` into ``size`` bands of equal length and seat the ``t``-th
    of every band at table ``t`` (with two per table, 1 meets n/2+1).

    ``len(order)`` must be a multiple of ``size``.
    """
    tables = len(order) // size
    return [tuple(order[band * tables + t] for band in range(size)) for t in range(tables)]


def fold(order: Sequence[str], size: int) -> list[tuple[str, ...]]:
    """Knockout: cut ``order`` into ``size`` bands and snake through them, so the best seed
    meets the weakest (with two per table, 1 meets n, 2 meets n-1).

    ``len(order)`` must be a multiple of ``size``.
    """
    tables = len(order) // size
    groups: list[tuple[str, ...]] = []
    for t in range(tables):
        groups.append(
            tuple(
                order[band * tables + (t if band % 2 == 0 else tables - 1 - t)]
                for band in range(size)
            )
        )
    return groups


def _conflicts(candidate: str, members: Sequence[str], met: Mapping[str, frozenset[str]]) -> int:
    seen = met.get(candidate, _EMPTY)
    return sum(1 for member in members if member in seen)


def group_swiss(
    order: Sequence[str],
    sizes: Sequence[int],
    met: Mapping[str, frozenset[str]],
    *,
    budget: int = SEARCH_BUDGET,
) -> list[tuple[str, ...]]:
    """Split ``order`` (best first) into consecutive tables of ``sizes`` entrants, keeping
    each table as close in the order as possible and seating nobody with an entrant they
    have met (``met``), when that can be done.

    The search is a depth-first backtracking over seats: a table's first seat takes the best
    entrant not yet seated, its other seats the next ones in order who have met nobody at
    the table; when a table cannot be completed, the previous choices are revised, nearest
    first. It runs from the top of the order and, if that takes more than
    :data:`QUICK_BUDGET` placements, from the bottom up (the last tables filled first, the
    worst entrant opening the last table); then each direction again with the whole
    ``budget``. It is exhaustive within that budget; past it (no rematch-free seating found
    in time, or none exists) :func:`group_fewest_rematches` decides.
    """
    if sum(sizes) != len(order):
        raise ValueError("the table sizes must add up to the field")
    # Late in a Swiss, the bottom of the standings has often met itself, and revising
    # choices from the top to make room there can take long; the same search from the
    # bottom up settles it at once. Each direction gets a quick try, then the full budget.
    quick = min(budget, QUICK_BUDGET)
    for forward, allowed in ((True, quick), (False, quick), (True, budget), (False, budget)):
        if forward:
            found = _search(order, sizes, met, allowed)
        else:
            backward = _search(order[::-1], sizes[::-1], met, allowed)
            found = None if backward is None else [g[::-1] for g in backward[::-1]]
        if found is not None:
            return found
    return group_fewest_rematches(order, sizes, met)


def _search(
    order: Sequence[str],
    sizes: Sequence[int],
    met: Mapping[str, frozenset[str]],
    budget: int,
) -> list[tuple[str, ...]] | None:
    count = len(order)
    seen = [met.get(entrant, _EMPTY) for entrant in order]
    used = [False] * count
    # slot_table[p]/slot_first[p]: the table of the p-th placement and whether it opens it.
    slot_first: list[bool] = []
    for size in sizes:
        slot_first.extend([True] + [False] * (size - 1))
    chosen: list[int] = []
    table_start: list[int] = []  # index into `chosen` where each open table starts
    next_try = 0  # the smallest order index to try at the current slot
    first_unused = 0
    steps = 0
    while len(chosen) < count:
        steps += 1
        if steps > budget:
            return None
        slot = len(chosen)
        pick = -1
        if slot_first[slot]:
            while first_unused < count and used[first_unused]:
                first_unused += 1
            # A table opens with the best unseated entrant; there is no other choice to
            # revise there, so a retry at this slot means backtracking further.
            if next_try <= first_unused:
                pick = first_unused
        else:
            start = table_start[-1]
            members = [order[chosen[i]] for i in range(start, slot)]
            candidate = max(next_try, chosen[-1] + 1)
            while candidate < count:
                if not used[candidate]:
                    # ``met`` is symmetric (a meeting is recorded for both), so one side's
                    # history is enough.
                    history = seen[candidate]
                    if not any(member in history for member in members):
                        pick = candidate
                        break
                candidate += 1
        if pick >= 0:
            if slot_first[slot]:
                table_start.append(slot)
            chosen.append(pick)
            used[pick] = True
            next_try = 0
            continue
        # Dead end: undo the last placement and try the next candidate for that slot.
        if not chosen:
            return None
        last = chosen.pop()
        used[last] = False
        if last < first_unused:
            first_unused = last
        if table_start and table_start[-1] == len(chosen):
            table_start.pop()
        next_try = last + 1
    groups: list[tuple[str, ...]] = []
    position = 0
    for size in sizes:
        groups.append(tuple(order[chosen[position + i]] for i in range(size)))
        position += size
    return groups


def group_fewest_rematches(
    order: Sequence[str], sizes: Sequence[int], met: Mapping[str, frozenset[str]]
) -> list[tuple[str, ...]]:
    """The fallback: tables filled greedily in order, each seat taking the first unseated
    entrant with the fewest meetings with the table so far (no backtracking)."""
    remaining = list(order)
    groups: list[tuple[str, ...]] = []
    for size in sizes:
        members = [remaining.pop(0)]
        while len(members) < size:
            best_index = 0
            best_conflicts = _conflicts(remaining[0], members, met)
            for index in range(1, len(remaining)):
                if best_conflicts == 0:
                    break
                conflicts = _conflicts(remaining[index], members, met)
                if conflicts < best_conflicts:
                    best_index, best_conflicts = index, conflicts
            members.append(remaining.pop(best_index))
        groups.append(tuple(members))
    return groups


def round_robin_schedule(order: Sequence[str], size: int) -> list[list[tuple[str, ...]]]:
    """Every round's tables until every two entrants have shared a table.

    With two per table this is the circle method (``n - 1`` rounds, ``n`` when ``n`` is odd,
    each round one entrant sitting out). With more per table, rounds are built greedily: who
    sits out rotates (fewest rounds out first, then from the end of ``order``), each table
    opens with the entrant who still has the most entrants to meet, and each seat takes the
    entrant who meets the most new faces at the table (earlier in ``order`` on equal terms).
    Entrants left over (fewer than ``size``) are not in any table of the round.
    """
    if size == 2:
        return _circle(order)
    field = list(order)
    position = {entrant: index for index, entrant in enumerate(field)}
    unmet: dict[str, set[str]] = {entrant: set(field) - {entrant} for entrant in field}
    sat_out = dict.fromkeys(field, 0)
    rounds: list[list[tuple[str, ...]]] = []
    leftover = len(field) % size
    if len(field) < size:
        return [[tuple(field)]] if len(field) > 1 else []
    while any(unmet.values()):
        out = sorted(field, key=lambda e: (sat_out[e], -position[e]))[:leftover]
        for entrant in out:
            sat_out[entrant] += 1
        free = [entrant for entrant in field if entrant not in out]
        tables: list[tuple[str, ...]] = []
        while free:
            head = max(free, key=lambda e: (len(unmet[e]), -position[e]))
            free.remove(head)
            members = [head]
            while len(members) < size:
                best = max(
                    free,
                    key=lambda e: (sum(1 for m in members if m in unmet[e]), -position[e]),
                )
                free.remove(best)
                members.append(best)
            tables.append(tuple(members))
        for group in tables:
            for a in group:
                unmet[a].difference_update(group)
        rounds.append(tables)
    return rounds


def _circle(order: Sequence[str]) -> list[list[tuple[str, ...]]]:
    slots: list[str | None] = list(order)
    if len(slots) % 2:
        slots.append(None)
    count = len(slots)
    rounds: list[list[tuple[str, ...]]] = []
    for _ in range(count - 1):
        tables: list[tuple[str, ...]] = []
        for i in range(count // 2):
            a, b = slots[i], slots[count - 1 - i]
            if a is not None and b is not None:
                tables.append((a, b))
        rounds.append(tables)
        # Keep the first slot, rotate the others one step.
        slots = [slots[0], slots[-1], *slots[1:-1]]
    return rounds
