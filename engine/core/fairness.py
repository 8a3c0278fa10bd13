"""Provably fair deals: the server-seed commitment and the deck key.

docs/architecture.md "Provably fair deals": at creation the server commits to
``sha256(server_seed)``;
players may add client seeds when they sit down; the deck key mixes both; the final event
reveals the server seed. The deck key is::

    sha256(b"dast/deck-key/v1" || sha256(server_seed) || sha256(client_seed_0) || … )

with one ``sha256(client_seed)`` per seat in seat order (an empty seed hashes like any
other). Hashing each part first gives every part a fixed length, so no two different
seed lists produce the same input.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Final

SERVER_SEED_BYTES: Final = 32
_DOMAIN: Final = b"dast/deck-key/v1"


def commit(server_seed: bytes) -> bytes:
    """The public commitment to a server seed: ``sha256(server_seed)``."""
    return hashlib.sha256(server_seed).digest()


def is_commitment_of(commitment: bytes, server_seed: bytes) -> bool:
    """Whether ``server_seed`` is the seed that ``commitment`` committed to."""
    return hmac.compare_digest(commitment, commit(server_seed))


def deck_key(server_seed: bytes, client_seeds: Sequence[bytes]) -> bytes:
    """The key of every shuffle in a match, mixing the server seed and the client seeds."""
    digest = hashlib.sha256(_DOMAIN)
    digest.update(hashlib.sha256(server_seed).digest())
    for seed in client_seeds:
        digest.update(hashlib.sha256(seed).digest())
    return digest.digest()
