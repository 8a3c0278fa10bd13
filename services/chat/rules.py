"""What a player may say: the text rules and the per-player rate.

Text follows the rules of display names (:func:`services.platform.validation.clean_display_name`:
NFKC, control, direction-override and invisible characters removed, runs of spaces made
one), then a length limit. The rate is a sliding window per player on the services' clock:
at most ``messages`` accepted in any ``window_ms``; a refused message does not count.
Where the talk is kept decides where the windows are (:meth:`TalkLog.send_rate
<services.chat.talk_log.TalkLog.send_rate>`): in the process for the embedded backend
(:class:`RateWindows`), in a key-value bucket beside the chat stream on NATS
(:class:`services.chat.send_rate.NatsSendRate`), so that a player whose calls land on
several lobby replicas gets one quota, not one per replica.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final, Protocol

import grpc

from services.chat.reasons import ChatReason
from services.platform.errors import ServiceError
from services.platform.validation import MAX_TEXT_CHARS, clean_display_name

MAX_TRACKED_PLAYERS: Final = 100_000
"""Players whose windows a process keeps before it forgets the idle ones."""


@dataclass(frozen=True, slots=True)
class TalkRules:
    """The limits of table talk (``DAST_CHAT_*``)."""

    max_chars: int = 200
    """Longest text, counted after cleaning (at most the 256 any request may carry)."""
    messages: int = 5
    """Messages one player may send in a window..."""
    window_ms: int = 10_000
    """...of this many milliseconds."""
    retention_days: float = 7.0
    """How long the talk is kept."""


def clean_text(raw: str, max_chars: int) -> str:
    """``raw`` as the table will see it.

    :raises ServiceError: INVALID_ARGUMENT ``chat_text_invalid`` when nothing visible is
        left, ``chat_too_long`` when more than ``max_chars`` characters are.
    """
    try:
        text = clean_display_name(raw, max_chars=MAX_TEXT_CHARS, field="text")
    except ServiceError:
        text = ""
    if not text:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, ChatReason.CHAT_TEXT_INVALID,
                           "text has no visible character once control, direction and "
                           "invisible characters are removed", metadata={"field": "text"})
    if len(text) > max_chars:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, ChatReason.CHAT_TOO_LONG,
                           f"text has more than {max_chars} characters",
                           metadata={"field": "text", "max_chars": str(max_chars)})
    return text


class SendRate(Protocol):
    """Where each player's recent messages are counted."""

    async def take(self, player_id: str, now_ms: int) -> None:
        """Count a message of ``player_id`` at ``now_ms``.

        :raises ServiceError: RESOURCE_EXHAUSTED ``chat_rate_limited`` (with the seconds
            until a message is allowed again) when the window is full.
        """
        ...


def rate_limited(messages: int, window_ms: int, wait_ms: int) -> ServiceError:
    """The refusal of a message past ``messages`` in ``window_ms``, allowed again in
    ``wait_ms``."""
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED, ChatReason.CHAT_RATE_LIMITED,
        f"at most {messages} messages in {window_ms / 1000:g} s: wait "
        f"{wait_ms / 1000:.1f} s", retry_after=max(wait_ms, 1) / 1000)


class RateWindows:
    """:class:`SendRate` in one process: each player's recent messages."""

    def __init__(self, messages: int, window_ms: int) -> None:
        self.messages = messages
        self.window_ms = window_ms
        self._sent: dict[str, deque[int]] = {}

    async def take(self, player_id: str, now_ms: int) -> None:
        """See :meth:`SendRate.take`."""
        if len(self._sent) > MAX_TRACKED_PLAYERS:
            self._forget_idle(now_ms)
        sent = self._sent.setdefault(player_id, deque())
        while sent and sent[0] <= now_ms - self.window_ms:
            sent.popleft()
        if len(sent) >= self.messages:
            raise rate_limited(self.messages, self.window_ms,
                               sent[0] + self.window_ms - now_ms)
        sent.append(now_ms)

    def _forget_idle(self, now_ms: int) -> None:
        self._sent = {player: sent for player, sent in self._sent.items()
                      if sent and sent[-1] > now_ms - self.window_ms}
