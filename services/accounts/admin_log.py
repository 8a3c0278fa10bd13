"""The operators' action log: every admin action (a player looked up, banned, a ban lifted, an
account erased) as one entry of an append-only chain, each entry's hash covering the
previous entry's, so that an entry changed, removed or slipped in afterwards breaks every
hash after it.

An entry's hash is SHA-256 of :data:`DOMAIN`, the previous entry's hash (32 zero bytes
before the first) and the entry's fields as canonical JSON (sorted keys, no spaces, UTF-8)::

    hash[n] = sha256(DOMAIN || hash[n-1] || json({"seq", "at_ms", "actor", "action",
                                                  "subject", "detail"}))

:func:`verify_chain` checks a run of entries (all of them, or those after a head noted
earlier); ``dast audit --admin-log`` runs it on the entries the accounts service lists
(``ModerationService.ListAdminActions``) and prints the head to note for the next check,
which then also finds the chain cut short or rewritten before it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

DOMAIN: Final = b"dast-admin-log-v1\n"
GENESIS: Final = bytes(32)
"""The previous hash of the first entry."""


class AdminAction:
    """The actions the log records (``AdminEntry.action``)."""

    FIND_PLAYERS: Final = "find_players"
    BAN: Final = "ban"
    LIFT_BAN: Final = "lift_ban"
    ERASE: Final = "erase"


@dataclass(frozen=True, slots=True)
class AdminEntry:
    """One entry: who (``actor``, an operator's player id) did what (``action``) to whom
    (``subject``: a player id, or the query of a search) and when, with the action's
    ``detail``, chained by ``prev_hash`` and ``hash``."""

    seq: int
    at_ms: int
    actor: str
    action: str
    subject: str
    detail: Mapping[str, Any]
    prev_hash: bytes
    hash: bytes


def canonical_detail(detail: Mapping[str, Any]) -> str:
    """``detail`` as the log stores it: canonical JSON."""
    return json.dumps(dict(detail), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(prev_hash: bytes, *, seq: int, at_ms: int, actor: str, action: str,
               subject: str, detail: Mapping[str, Any]) -> bytes:
    """The hash of the entry with these fields after an entry hashed ``prev_hash``."""
    body = {"seq": seq, "at_ms": at_ms, "actor": actor, "action": action,
            "subject": subject, "detail": dict(detail)}
    encoded = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(DOMAIN + prev_hash + encoded.encode()).digest()


def chained(prev: AdminEntry | None, *, at_ms: int, actor: str, action: str, subject: str,
            detail: Mapping[str, Any]) -> AdminEntry:
    """The entry that follows ``prev`` (None: the first of the log)."""
    seq = 1 if prev is None else prev.seq + 1
    prev_hash = GENESIS if prev is None else prev.hash
    return AdminEntry(seq, at_ms, actor, action, subject, dict(detail), prev_hash,
                      entry_hash(prev_hash, seq=seq, at_ms=at_ms, actor=actor, action=action,
                                 subject=subject, detail=detail))


@dataclass(frozen=True, slots=True)
class ChainProblem:
    """Where the chain breaks, and how, in plain words."""

    seq: int
    problem: str


def verify_chain(entries: Iterable[AdminEntry], *,
                 after: tuple[int, bytes] | None = None) -> list[ChainProblem]:
    """Every break in ``entries`` (in order of seq): a seq that does not follow the one
    before, a ``prev_hash`` that is not the hash before, a ``hash`` that is not the entry's.

    ``after``: the head (seq and hash) noted at an earlier check, which the entries must
    continue; None: they must start at the first entry."""
    problems: list[ChainProblem] = []
    expected_seq, expected_prev = (1, GENESIS) if after is None else (after[0] + 1, after[1])
    for entry in entries:
        if entry.seq != expected_seq:
            problems.append(ChainProblem(
                entry.seq, f"expected entry {expected_seq} here: entries are missing or "
                           "out of order"))
        if entry.prev_hash != expected_prev:
            problems.append(ChainProblem(
                entry.seq, "its previous hash is not the hash of the entry before it: an "
                           "earlier entry was changed, removed or inserted"))
        actual = entry_hash(entry.prev_hash, seq=entry.seq, at_ms=entry.at_ms,
                            actor=entry.actor, action=entry.action, subject=entry.subject,
                            detail=entry.detail)
        if actual != entry.hash:
            problems.append(ChainProblem(
                entry.seq, "its hash does not match its contents: the entry was changed"))
        expected_seq, expected_prev = entry.seq + 1, entry.hash
    return problems
