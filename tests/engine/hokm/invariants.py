"""Invariants of every Hokm state at rest (after a command's events), for the simulations."""

from __future__ import annotations

from engine.core.cards import FULL_PACK
from engine.hokm.state import HokmState, Phase


def _owned_masks(state: HokmState) -> list[int]:
    masks = [*state.hands, state.played, state.set_aside]
    masks += [1 << c for c in state.pile_a] + [1 << c for c in state.pile_b]
    return masks


def check_cards_conserved(state: HokmState) -> None:
    """No card is in two places; once the deal is complete every card is somewhere:
    hands, this round's plays, the set-aside cards or the piles."""
    union = 0
    for mask in _owned_masks(state):
        assert union & mask == 0, f"a card is in two places: {state!r}"
        union |= mask
    if state.phase == Phase.DECLARE_TRUMP:
        assert union == state.hands[state.hakem] and union.bit_count() == 5, repr(state)
    else:
        assert union == FULL_PACK, f"cards missing: {FULL_PACK & ~union:#x} in {state!r}"
    hand_sizes = {h.bit_count() for s, h in enumerate(state.hands) if s != state.hakem}
    if state.phase == Phase.PLAY and not state.trick:
        assert len(hand_sizes) <= 1, f"unequal hands between tricks: {state!r}"
    assert sum(state.tricks_won) == len(state.tricks)
    assert all(score >= 0 for score in state.scores)
