"""The deterministic generator (engine/core/rng.py; docs/architecture.md "The game protocol")."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from itertools import permutations

import pytest

from engine.core.rng import DeterministicRandom


def test_stream_is_hmac_sha256_in_counter_mode() -> None:
    # The documented construction, recomputed independently: block i = HMAC(key, label‖0‖i).
    key, label = b"key", "round/1/deal"
    block0 = hmac.new(key, label.encode() + b"\x00" + (0).to_bytes(8, "big"), hashlib.sha256)
    block1 = hmac.new(key, label.encode() + b"\x00" + (1).to_bytes(8, "big"), hashlib.sha256)
    words = [
        int.from_bytes(digest[i : i + 8], "big")
        for digest in (block0.digest(), block1.digest())
        for i in (0, 8, 16, 24)
    ]
    rng = DeterministicRandom(key, label)
    assert [rng.next_word() for _ in range(8)] == words


def test_same_key_and_label_give_the_same_shuffle() -> None:
    deck = list(range(52))
    first = DeterministicRandom(b"seed", "round/1/deal").shuffle(deck)
    again = DeterministicRandom(b"seed", "round/1/deal").shuffle(deck)
    other = DeterministicRandom(b"seed", "round/2/deal").shuffle(deck)
    assert first == again
    assert first != other
    assert sorted(first) == deck
    assert deck == list(range(52)), "shuffle must not mutate its input"


def test_randbelow_rejects_non_positive_bounds() -> None:
    rng = DeterministicRandom(b"k", "x")
    with pytest.raises(ValueError):
        rng.randbelow(0)


def test_randbelow_rejects_words_in_the_biased_tail() -> None:
    # With n = 3 the last (2**64 mod 3) words would bias the result: they must be skipped.
    rng = DeterministicRandom(b"k", "x")
    limit = (1 << 64) - ((1 << 64) % 3)
    rng._words = [5, limit]  # consumed from the end: first `limit` (rejected), then 5
    assert rng.randbelow(3) == 5 % 3


def test_shuffle_of_three_is_uniform_over_all_permutations() -> None:
    # 6,000 shuffles under different labels: every one of the 6 orders must appear about
    # 1,000 times (a chi-square statistic below 20.5 holds with probability > 0.999).
    counts = Counter(
        tuple(DeterministicRandom(b"uniform", f"trial/{i}").shuffle([0, 1, 2])) for i in range(6000)
    )
    assert set(counts) == set(permutations([0, 1, 2]))
    chi_square = sum((n - 1000) ** 2 / 1000 for n in counts.values())
    assert chi_square < 20.5
