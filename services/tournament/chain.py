"""The hash chain of a tournament's stored log (docs/architecture.md "Tamper evidence").

Every stored event carries ``sha256(DOMAIN || tournament_id || previous hash || bytes)``,
where the bytes are the engine's canonical encoding of the event
(:func:`engine.tournament.encode_event`) and the first event's previous hash is
:data:`GENESIS`. Whoever holds a copy of a head hash (a standings stream sends it with every
update) can tell later whether the log before it was changed. No salt is needed: a
tournament's events hide nothing but the seed, which its own commitment covers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

DOMAIN: Final = b"dast/tournament-chain/v1\x00"
GENESIS: Final = bytes(32)


def chain_hash(tournament_id: str, previous: bytes, body: bytes) -> bytes:
    """The hash of an event whose canonical bytes are ``body``, after ``previous``."""
    encoded_id = tournament_id.encode()
    return hashlib.sha256(
        DOMAIN + len(encoded_id).to_bytes(4, "big") + encoded_id + previous + body
    ).digest()


def broken_links(tournament_id: str, links: Sequence[tuple[bytes, bytes]]) -> list[int]:
    """The 1-based positions of ``(body, hash)`` pairs whose hash does not chain."""
    broken = []
    previous = GENESIS
    for position, (body, stored) in enumerate(links, start=1):
        expected = chain_hash(tournament_id, previous, body)
        if stored != expected:
            broken.append(position)
        previous = stored
    return broken
