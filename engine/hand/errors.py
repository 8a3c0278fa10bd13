"""Violation codes of Hand (docs/rules/hand.md), on top of the shared
:class:`engine.core.errors.Code`.

Every code names ONE way a command breaks a rule, so a client can switch on it. The meld
codes come first (one per way a meld is invalid, docs/rules/hand.md "Melds"); the game's turn
codes follow. Codes never change once shipped.

Exception tree (from :mod:`engine.core.errors`)::

    ValueError
     └── RuleViolation(HandCode.X, message)   e.g. HandCode.RUN_HAS_GAP
          └── InvalidCommand(Code.INVALID_CARD, message)   not a card id at all
"""

from __future__ import annotations

from enum import StrEnum


class HandCode(StrEnum):
    """Rule-violation codes of Hand."""

    # ---- one code per way a meld is invalid (docs/rules/hand.md "Melds") ----
    MELD_TOO_SHORT = "meld_too_short"
    """Fewer than 3 cards."""
    DUPLICATE_CARD = "duplicate_card"
    """The same physical card listed twice."""
    DUPLICATE_SUIT_IN_SET = "duplicate_suit_in_set"
    """Two cards of one suit in a set (two identical cards included)."""
    SET_MIXED_RANKS = "set_mixed_ranks"
    """A set whose cards are not all of one rank."""
    SET_TOO_LARGE = "set_too_large"
    """More than 4 cards of one rank."""
    RUN_MIXED_SUITS = "run_mixed_suits"
    """A run whose cards are not all of one suit."""
    RUN_HAS_GAP = "run_has_gap"
    """A run whose ranks are not consecutive."""
    RUN_REPEATED_RANK = "run_repeated_rank"
    """A run holding one rank twice (other than the ace, see ACE_IN_MIDDLE)."""
    RUN_WRAPS = "run_wraps"
    """A run that is consecutive only around the corner K-A-2 (the ace between K and 2)."""
    ACE_IN_MIDDLE = "ace_in_middle"
    """A run holding two aces (A-2-…-K-A): an ace is low or high, never both, so one of
    the two would have to stand inside the run."""
    TOO_MANY_JOKERS = "too_many_jokers"
    """More jokers than ``max_jokers_per_meld``."""
    TOO_FEW_NATURALS = "too_few_naturals"
    """Fewer than 2 natural cards."""
    JOKER_FACE_MISSING = "joker_face_missing"
    """A joker in the meld without a stated face."""
    JOKER_FACE_INVALID = "joker_face_invalid"
    """A joker's stated face is not a card, or does not fit the meld."""
    CANNOT_LAY_OFF = "cannot_lay_off"
    """The card does not extend that table meld."""
    CANNOT_RETRIEVE_JOKER = "cannot_retrieve_joker"
    """The cards given do not take the place of that meld's joker."""

    # ---- the game's turn codes (docs/rules/hand.md "A turn", "Melds", "End of a round") ----
    FIRST_TURN_DISCARD_ONLY = "first_turn_discard_only"
    """The player after the dealer starts the round by discarding only."""
    MUST_DRAW_FIRST = "must_draw_first"
    """A turn starts with a draw."""
    ALREADY_DREW = "already_drew"
    """One draw a turn."""
    DISCARD_PILE_EMPTY = "discard_pile_empty"
    """No discard to take."""
    TAKEN_DISCARD_UNUSABLE = "taken_discard_unusable"
    """The top discard fits no meld the player could lay this turn (before opening: no
    opening reaching the threshold), so taking it would leave the turn without an end."""
    MUST_USE_TAKEN_DISCARD = "must_use_taken_discard"
    """The card taken from the discard pile must join a new meld before the turn can end,
    and no move may leave it unable to."""
    OPENING_MUST_USE_TAKEN_DISCARD = "opening_must_use_taken_discard"
    """Before opening, the taken discard must be part of the opening."""
    CARD_NOT_IN_HAND = "card_not_in_hand"
    """The card is not in the player's hand."""
    CANNOT_MELD_LAST_CARD = "cannot_meld_last_card"
    """A turn ends by discarding, so the last card is never melded or laid off."""
    OPENING_BELOW_MINIMUM = "opening_below_minimum"
    """The turn's new melds total less than ``open_min``."""
    OPENING_NOT_ABOVE_PREVIOUS = "opening_not_above_previous"
    """``must_beat_previous``: the opening does not exceed the round's highest opening."""
    NOT_OPENED = "not_opened"
    """Lay-offs and joker retrievals come only after opening."""
    NO_SUCH_MELD = "no_such_meld"
    """No table meld has that id."""
    HAND_MUST_DISCARD = "hand_must_discard"
    """After laying the whole hand but one card below the threshold (a "hand"), the
    player discards the last card."""
