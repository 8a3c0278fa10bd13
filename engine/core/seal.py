"""The seal over a finished log: the server's Ed25519 signature of its head.

A hash chain proves nothing to someone who can recompute it, and the operator can. The
seal binds one server key to one game's whole history: the signed message is::

    "dast/log-seal/v1" || 0x00 || uint32_be(len(game_id)) || game_id (UTF-8)
    || uint64_be(seq) || head_hash

where ``seq`` is the log's last seq and ``head_hash`` the chain hash after it
(:mod:`engine.core.chain`), signed with Ed25519 (RFC 8032). Whoever trusts the public key
(obtained from the server, not from the export) then trusts every event of the log, since
each one is chained into the head. Signing needs the private key and lives in the services;
this module only builds the message and verifies.
"""

from __future__ import annotations

import hmac
import struct
from collections.abc import Sequence
from enum import StrEnum
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from dast.v1 import log_pb2

PUBLIC_KEY_BYTES: Final = 32
SIGNATURE_BYTES: Final = 64
_DOMAIN: Final = b"dast/log-seal/v1\x00"


class SealProblem(StrEnum):
    """Why a seal does not vouch for a log (stable codes)."""

    MISSING = "seal_missing"
    MALFORMED = "seal_malformed"
    BAD_SIGNATURE = "seal_bad_signature"
    WRONG_HEAD = "seal_wrong_head"
    UNTRUSTED_KEY = "seal_untrusted_key"


def seal_message(game_id: str, seq: int, head_hash: bytes) -> bytes:
    """The bytes a seal signs for the log of ``game_id`` ending at ``seq`` with ``head_hash``."""
    name = game_id.encode("utf-8")
    return _DOMAIN + struct.pack(">I", len(name)) + name + struct.pack(">Q", seq) + head_hash


def verify_seal(seal: log_pb2.LogSeal, public_key: bytes | None = None) -> SealProblem | None:
    """Check the signature of ``seal`` under its own key, and that this key is
    ``public_key`` when one is given; None when the seal is good.

    The seal's own key only shows the log was not changed since someone holding that key
    signed it; pass the key obtained from the server to show that the server did.
    """
    if len(seal.public_key) != PUBLIC_KEY_BYTES or len(seal.signature) != SIGNATURE_BYTES:
        return SealProblem.MALFORMED
    if public_key is not None and not hmac.compare_digest(seal.public_key, public_key):
        return SealProblem.UNTRUSTED_KEY
    try:
        key = Ed25519PublicKey.from_public_bytes(seal.public_key)
    except ValueError:
        return SealProblem.MALFORMED
    try:
        key.verify(seal.signature, seal_message(seal.game_id, seal.seq, seal.head_hash))
    except InvalidSignature:
        return SealProblem.BAD_SIGNATURE
    return None


def seal_covers(seal: log_pb2.LogSeal, entries: Sequence[log_pb2.LogEntry]) -> bool:
    """Whether ``seal`` names the last entry of ``entries`` (its seq and its hash)."""
    if not entries:
        return False
    last = entries[-1]
    return seal.seq == last.event.seq and hmac.compare_digest(seal.head_hash, last.hash)
