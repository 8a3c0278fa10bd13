"""Rule violations with stable codes.

Every command given to ``decide`` either yields events or raises one of these. The code
is part of the API (clients switch on it; it travels in ``google.rpc.ErrorInfo.reason``)
and never changes once shipped; the message is for people and may change.

Exception tree::

    ValueError
     └── RuleViolation          a well-formed command that breaks a rule → FAILED_PRECONDITION
          └── InvalidCommand    a malformed command (no such card, missing field, wrong game)
                                → INVALID_ARGUMENT

Games add their own codes as ``StrEnum`` members (``engine.hokm.errors.HokmCode``); the
shared ones are :class:`Code`.
"""

from __future__ import annotations

from enum import StrEnum


class Code(StrEnum):
    """Violation codes shared by every game."""

    NOT_YOUR_TURN = "not_your_turn"
    GAME_OVER = "game_over"
    WRONG_PHASE = "wrong_phase"
    WRONG_GAME = "wrong_game"
    MALFORMED_COMMAND = "malformed_command"
    INVALID_CARD = "invalid_card"
    INVALID_SEAT = "invalid_seat"
    INVALID_RULES = "invalid_rules"
    INVALID_PLAYERS = "invalid_players"


class RuleViolation(ValueError):
    """A command that the rules do not allow now.

    :param code: the stable code (a member of a game's code enum).
    :param message: what went wrong, for a person, naming the offending command.
    """

    def __init__(self, code: StrEnum | str, message: str) -> None:
        super().__init__(message)
        self.code = str(code)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class InvalidCommand(RuleViolation):
    """A command that is malformed whatever the state: no such card, a missing field."""
