"""A seat's receipts must not reveal the cards hidden from it (engine/core/chain.py).

The case searched is small enough to enumerate in full: three-player Hokm, where the hakem
lays 4 of its 20 cards aside, hidden from both defenders (docs/rules/hokm.md "Three players").
When that happens a defender holds its own 16 cards and has seen none of the hakem's, so
the set-aside is one of C(36, 4) = 58,905 sorted 4-card sets: a search any player could
run in a second. Everything the defender holds goes into the search: its redacted copy of
every event so far and the hash it received after each one.

Under a plain ``sha256(prev || event)`` chain the search finds the set-aside at once; under
the salted chain it finds nothing, because the salt comes from the server seed, which the
defender's copy of the first event does not carry. The same search with the true chain key
does find the set, which shows the search itself is sound.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from itertools import combinations

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.chain import GENESIS_HASH, canonical_bytes, chain_hash, chain_log, log_chain_key
from engine.core.testing import play_bots
from engine.hokm.bots import BOTS

THREE_PLAYERS = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=1)
ALL_CARDS = frozenset(range(52))


def _plain_chain(events: Iterable[log_pb2.Event]) -> list[bytes]:
    """The hashes an unsalted chain would have sent: ``sha256(prev || canonical bytes)``."""
    hashes, prev = [], GENESIS_HASH
    for event in events:
        prev = hashlib.sha256(prev + canonical_bytes(event)).digest()
        hashes.append(prev)
    return hashes


def _first_set_aside(events: list[log_pb2.Event]) -> int:
    return next(i for i, e in enumerate(events) if e.hokm.WhichOneof("kind") == "cards_set_aside")


def _candidates(redacted: log_pb2.Event, unknown: frozenset[int]) -> list[tuple[tuple[int, ...],
                                                                                  log_pb2.Event]]:
    """Every full event the redacted set-aside could stand for: one per sorted 4-card set."""
    found: list[tuple[tuple[int, ...], log_pb2.Event]] = []
    for cards in combinations(sorted(unknown), 4):
        candidate = log_pb2.Event()
        candidate.CopyFrom(redacted)
        candidate.hokm.cards_set_aside.cards.extend(cards)
        found.append((cards, candidate))
    return found


def _search(
    candidates: list[tuple[tuple[int, ...], log_pb2.Event]],
    prev: bytes,
    receipt: bytes,
    hash_of: Callable[[bytes, log_pb2.Event], bytes],
) -> list[tuple[int, ...]]:
    return [cards for cards, event in candidates if hash_of(prev, event) == receipt]


def test_a_defenders_receipts_do_not_reveal_the_hakems_set_aside_cards() -> None:
    events = play_bots(hokm, BOTS, THREE_PLAYERS, bytes(range(32)), ["greedy"] * 3, 11)
    index = _first_set_aside(events)
    hakem = events[index].hokm.cards_set_aside.seat
    defender = (hakem + 1) % 3
    secret = tuple(events[index].hokm.cards_set_aside.cards)

    # Everything the defender received up to the set-aside: its redacted events, receipts.
    seen_events = [hokm.redact(event, defender) for event in events[: index + 1]]
    receipts = [entry.hash for entry in chain_log(events)]
    # Nothing of this round is on the table yet: the defender knows its own 16 cards only.
    own_hand = hokm.view(hokm.replay(seen_events[:index]), defender).hand
    unknown = ALL_CARDS - set(own_hand)
    assert set(secret) <= unknown and len(unknown) == 36
    candidates = _candidates(seen_events[index], unknown)
    assert len(candidates) == 58_905

    # An unsalted chain gives the set away: exactly one candidate matches the receipt.
    plain = _plain_chain(events)
    assert _search(candidates, plain[index - 1], plain[index],
                   lambda prev, e: hashlib.sha256(prev + canonical_bytes(e)).digest()) == [secret]

    # The salted chain: the defender's copy of the first event carries no server seed, so
    # the key it can derive salts nothing right, and no candidate matches.
    defenders_key = log_chain_key(seen_events[0])
    assert _search(candidates, receipts[index - 1], receipts[index],
                   lambda prev, e: chain_hash(prev, e, defenders_key)) == []

    # With the true key (revealed only by the final event) the same search succeeds.
    true_key = log_chain_key(events[0])
    assert true_key != defenders_key
    assert _search(candidates, receipts[index - 1], receipts[index],
                   lambda prev, e: chain_hash(prev, e, true_key)) == [secret]
