"""The deterministic generator behind every shuffle, documented for any language.

docs/architecture.md "Provably fair deals": randomness comes only from the game's seed. A stream is
named by a ``key``
(the deck key of :mod:`engine.core.fairness`) and a ``label`` (e.g. ``"round/3/deal"``), so
each shuffle of a match can be re-derived on its own.

Block ``i`` (``i`` = 0, 1, 2, …) of a stream is ``HMAC-SHA256(key, label_utf8 || 0x00 ||
i as 8-byte big-endian)``. The stream reads each block as four 8-byte big-endian unsigned
words, in order. ``randbelow(n)`` draws words until one is below
``2**64 - (2**64 mod n)`` and returns it mod ``n`` (rejection sampling: no modulo bias).
``shuffle`` is Fisher–Yates from the last position down: for ``i`` from ``len-1`` to 1,
swap position ``i`` with position ``randbelow(i + 1)``.

>>> DeterministicRandom(b"k", "demo").shuffle(list(range(5)))
[1, 3, 4, 2, 0]
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final, TypeVar

T = TypeVar("T")

_WORD_SPACE: Final = 1 << 64


class DeterministicRandom:
    """A reproducible stream of unbiased integers derived from ``key`` and ``label``."""

    __slots__ = ("_counter", "_keyed", "_words")

    def __init__(self, key: bytes, label: str) -> None:
        # HMAC's keyed state (the key's pads) absorbs the label once; each block then only
        # copies it and adds the counter: the same bytes as a fresh HMAC per block.
        self._keyed = hmac.new(key, label.encode("utf-8") + b"\x00", hashlib.sha256)
        self._counter = 0
        self._words: list[int] = []

    def _refill(self) -> None:
        mac = self._keyed.copy()
        mac.update(self._counter.to_bytes(8, "big"))
        block = mac.digest()
        self._counter += 1
        # Words are consumed from the end of the list, so store them reversed.
        self._words = [int.from_bytes(block[i : i + 8], "big") for i in (24, 16, 8, 0)]

    def next_word(self) -> int:
        """The next 64-bit word of the stream."""
        if not self._words:
            self._refill()
        return self._words.pop()

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``.

        :raises ValueError: if ``n`` is not positive.
        """
        if n <= 0:
            raise ValueError(f"randbelow needs a positive bound, got {n}")
        limit = _WORD_SPACE - (_WORD_SPACE % n)
        while True:
            word = self.next_word()
            if word < limit:
                return word % n

    def shuffle(self, items: list[T]) -> list[T]:
        """Return a new list with ``items`` in a uniformly random order (Fisher–Yates)."""
        result = list(items)
        for i in range(len(result) - 1, 0, -1):
            j = self.randbelow(i + 1)
            result[i], result[j] = result[j], result[i]
        return result
