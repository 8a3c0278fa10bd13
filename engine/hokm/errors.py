"""Hokm's own rule-violation codes (the shared ones are :class:`engine.core.errors.Code`).

Codes are stable API: clients switch on them, so they never change once shipped.
Which exception carries which code::

    RuleViolation (FAILED_PRECONDITION)
     ├── Code.NOT_YOUR_TURN, Code.GAME_OVER, Code.WRONG_PHASE
     ├── HokmCode.NOT_HAKEM            a non-hakem declares trump or sets cards aside
     ├── HokmCode.TRUMP_NOT_DECLARED   a card is played before trump is declared
     ├── HokmCode.CARD_NOT_IN_HAND     a card the seat does not hold
     ├── HokmCode.MUST_FOLLOW_SUIT     a card off the led suit while holding the led suit
     ├── HokmCode.WRONG_SET_ASIDE_COUNT  three players: not exactly 4 cards laid aside
     └── InvalidCommand (INVALID_ARGUMENT), malformed whatever the state
          ├── Code.WRONG_GAME, Code.MALFORMED_COMMAND, Code.INVALID_CARD, Code.INVALID_SEAT
          ├── HokmCode.INVALID_SUIT       a suit outside ♠ ♥ ♣ ♦
          ├── HokmCode.DUPLICATE_CARD     the same card twice in one set-aside
          └── HokmCode.NO_SUCH_PILE       two players: a pile other than 0 (A) or 1 (B)
"""

from __future__ import annotations

from enum import StrEnum


class HokmCode(StrEnum):
    """Violation codes that only Hokm uses."""

    NOT_HAKEM = "not_hakem"
    TRUMP_NOT_DECLARED = "trump_not_declared"
    CARD_NOT_IN_HAND = "card_not_in_hand"
    MUST_FOLLOW_SUIT = "must_follow_suit"
    WRONG_SET_ASIDE_COUNT = "wrong_set_aside_count"
    DUPLICATE_CARD = "duplicate_card"
    NO_SUCH_PILE = "no_such_pile"
    INVALID_SUIT = "invalid_suit"
