"""Audit a finished match's log: the hash chain, the seed commitment and every deal.

The audit re-runs the whole match: it calls the game's ``start`` with the arguments the
first event records and the server seed the last event reveals, then feeds ``decide`` the
command each player-caused event records, and compares every event it gets with the log,
byte for byte. A rigged deal, an edited card or a forged score therefore all show up as the
first event that differs, named with the field that differs and both values. The games come
from :mod:`engine.registry` with seat control added (:mod:`engine.core.control`), so a seat
taken over by a bot and handed back is re-derived the same way: a takeover of a seat a bot
already held, or a game move renumbered around one, differs too.

What the chain alone cannot show (the operator can recompute it) comes from outside the
log: :func:`check_receipts` compares the log with the hashes a seat was sent during the
match, and :mod:`engine.core.seal` checks the server's signature over the head
(:mod:`engine.core.verification` runs every check on an export). A match whose server seed
an admin chose is reported (``server_seed_chosen``): its deals are re-derivable like any
other, but the operator knew them in advance.

Every problem is a :class:`Finding`: the check that failed, a stable code, a sentence in
plain words naming the seq, and what was expected there against what the log holds.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from dast.v1 import log_pb2
from engine.core.chain import (
    GENESIS_HASH,
    canonical_bytes,
    chain_hash,
    find_chain_break,
    log_chain_key,
)
from engine.core.errors import RuleViolation
from engine.core.fairness import commit, is_commitment_of
from engine.core.logformat import Receipt
from engine.core.protocol import Game, MatchSetup

_SHOWN_CHARS: Final = 120
"""Longest value a finding quotes (a whole message is cut, with an ellipsis)."""
_SHOWN_HEX: Final = 16
"""Hex digits of a hash or seed a finding quotes: enough to tell two apart."""


class Check(StrEnum):
    """The checks of a verification, named as ``dast verify`` prints them."""

    CHAIN = "hash chain"
    COMMITMENT = "seed commitment"
    DEALS = "deals and moves"
    SEAL = "seal"
    RECEIPTS = "receipts"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a check found wrong, and where."""

    check: Check
    code: str
    """Stable, for programs: ``hash_mismatch``, ``event_differs``, ``seal_missing`` …"""
    message: str
    """For people: what failed, in plain words, naming the seq."""
    seq: int | None = None
    """The event to blame, when there is one."""
    expected: str = ""
    """What the check wanted there ("" when it does not apply)."""
    found: str = ""
    """What the log holds there."""

    def __str__(self) -> str:
        if not (self.expected or self.found):
            return self.message
        return f"{self.message} (expected {self.expected}, found {self.found})"


def short_hex(data: bytes) -> str:
    """The first hex digits of a hash or seed, for quoting it in a finding."""
    text = data.hex()
    return text if len(text) <= _SHOWN_HEX else f"{text[:_SHOWN_HEX]}…"


@dataclass(slots=True)
class AuditReport:
    """The outcome of :func:`audit_log`; ``ok`` when no problem was found."""

    events: int = 0
    findings: list[Finding] = field(default_factory=list)
    chain_ok: bool = False
    commitment_ok: bool = False
    deals_ok: bool = False
    server_seed_chosen: bool = False
    """The first event records that an admin chose the server seed (a warning, not a fault)."""

    @property
    def problems(self) -> list[str]:
        """Every finding as one line of text."""
        return [str(finding) for finding in self.findings]

    @property
    def ok(self) -> bool:
        return not self.findings and self.chain_ok and self.commitment_ok and self.deals_ok


def audit_log(entries: Sequence[log_pb2.LogEntry]) -> AuditReport:
    """Verify a finished match's full (unredacted) log."""
    from engine.registry import game_of_event  # the registry imports every game

    report = AuditReport(events=len(entries))
    if not entries:
        report.findings.append(Finding(Check.CHAIN, "log_empty", "the log has no event"))
        return report
    chain_problem = _chain_finding(entries)
    if chain_problem is None:
        report.chain_ok = True
    else:
        report.findings.append(chain_problem)

    events = [entry.event for entry in entries]
    try:
        game = game_of_event(events[0])
        setup = game.setup_of(events[0])
    except (RuleViolation, ValueError) as error:
        report.findings.append(Finding(
            Check.DEALS, "not_a_match_start",
            f"seq {events[0].seq}: the first event is not a match start ({error})",
            seq=events[0].seq,
        ))
        return report
    report.server_seed_chosen = setup.server_seed_chosen
    seed = game.revealed_seed(events[-1])
    last = events[-1].seq
    if seed is None:
        report.findings.append(Finding(
            Check.COMMITMENT, "seed_not_revealed",
            f"seq {last}: the last event reveals no server seed (the match is not finished, "
            "or its end was cut off)",
            seq=last, expected="the final event, revealing the server seed",
            found="an event revealing nothing",
        ))
        return report
    if is_commitment_of(setup.server_seed_commitment, seed):
        report.commitment_ok = True
    else:
        report.findings.append(Finding(
            Check.COMMITMENT, "commitment_mismatch",
            f"seq {last}: the revealed server seed is not the one committed to at seq "
            f"{events[0].seq}: its SHA-256 differs from the commitment",
            seq=last, expected=f"SHA-256 {short_hex(setup.server_seed_commitment)}",
            found=f"SHA-256 {short_hex(commit(seed))}",
        ))
        return report
    problem = _rerun(game, setup, seed, events)
    if problem is None:
        report.deals_ok = True
    else:
        report.findings.append(problem)
    return report


def _chain_finding(entries: Sequence[log_pb2.LogEntry]) -> Finding | None:
    """The first break of the chain in plain words (None when intact)."""
    broken = find_chain_break(entries)
    if broken is None:
        return None
    entry = entries[broken.index]
    wanted_seq = broken.index + 1
    found_seq = entry.event.seq
    if found_seq > wanted_seq:
        return Finding(
            Check.CHAIN, "seq_gap",
            f"seq {wanted_seq}: the log jumps from seq {wanted_seq - 1} to seq {found_seq}: "
            f"an event is missing or out of place",
            seq=wanted_seq, expected=f"seq {wanted_seq}", found=f"seq {found_seq}",
        )
    if found_seq != wanted_seq:
        return Finding(
            Check.CHAIN, "seq_out_of_order",
            f"seq {wanted_seq}: the log goes back to seq {found_seq} after seq "
            f"{wanted_seq - 1}: events are out of order or repeated",
            seq=wanted_seq, expected=f"seq {wanted_seq}", found=f"seq {found_seq}",
        )
    previous = entries[broken.index - 1].hash if broken.index else GENESIS_HASH
    recomputed = chain_hash(previous, entry.event, log_chain_key(entries[0].event))
    return Finding(
        Check.CHAIN, "hash_mismatch",
        f"seq {found_seq}: the stored hash does not follow from this event and the ones "
        "before it: the event, or its hash, was changed after it was chained",
        seq=found_seq, expected=short_hex(recomputed), found=short_hex(entry.hash),
    )


def _rerun(g: Game, setup: MatchSetup, seed: bytes, events: list[log_pb2.Event]
           ) -> Finding | None:
    try:
        expected = g.start(
            setup.rules, seed, setup.players, at_ms=events[0].at_ms,
            server_seed_chosen=setup.server_seed_chosen,
        )
    except RuleViolation as error:
        return Finding(Check.DEALS, "setup_invalid",
                       f"seq {events[0].seq}: the recorded setup cannot start a match "
                       f"({error.message})", seq=events[0].seq)
    index = 0
    state: object = None
    while True:
        mismatch = _compare(expected, events, index)
        if mismatch is not None:
            return mismatch
        for event in expected:
            state = g.evolve(state, event)
        index += len(expected)
        if index >= len(events):
            return None
        event = events[index]
        command = g.command_for(event)
        if command is None:
            return Finding(
                Check.DEALS, "not_a_move",
                f"seq {event.seq}: an event no player caused, where the rules cause none "
                "by themselves (an event was added, moved or dropped)",
                seq=event.seq, expected="a player's move", found=_kind(event),
            )
        try:
            expected = g.decide(state, command)
        except RuleViolation as error:
            return Finding(
                Check.DEALS, "move_breaks_rule",
                f"seq {event.seq}: the recorded move breaks a rule ({error.code}): "
                f"{error.message}",
                seq=event.seq, expected="a move the rules allow", found=_kind(event),
            )
        if not expected:
            return Finding(Check.DEALS, "move_without_effect",
                           f"seq {event.seq}: the recorded move produced no event",
                           seq=event.seq, found=_kind(event))


def _compare(expected: list[log_pb2.Event], events: list[log_pb2.Event], index: int
             ) -> Finding | None:
    for offset, want in enumerate(expected):
        if index + offset >= len(events):
            return Finding(
                Check.DEALS, "log_ends_early",
                f"seq {want.seq}: the log ends at seq {len(events)} where the rules continue",
                seq=want.seq, expected=_kind(want), found="the end of the log",
            )
        got = events[index + offset]
        if canonical_bytes(got) != canonical_bytes(want):
            path, wanted, held = _difference(want, got)
            return Finding(
                Check.DEALS, "event_differs",
                f"seq {got.seq}: the log's event is not the one the setup, the revealed "
                f"seed and the moves before it give: {path} differs",
                seq=got.seq, expected=wanted, found=held,
            )
    return None


def _kind(event: log_pb2.Event) -> str:
    """What an event is, in a word or two (``hokm.card_played``, ``seat_control``)."""
    member = event.WhichOneof("game")
    if member is None:
        return "seat_control" if event.HasField("seat_control") else "an empty event"
    payload = getattr(event, member)
    kind = payload.WhichOneof("kind") if payload.DESCRIPTOR.oneofs_by_name.get("kind") else None
    return f"{member}.{kind}" if kind else member


def _difference(want: Message, got: Message, path: str = "") -> tuple[str, str, str]:
    """The first field in which two messages of one type differ: (its path, the value
    wanted, the value held). The messages must differ."""
    for descriptor in want.DESCRIPTOR.fields:
        name = f"{path}{descriptor.name}"
        mine, theirs = getattr(want, descriptor.name), getattr(got, descriptor.name)
        if descriptor.is_repeated:
            if list(mine) == list(theirs):
                continue
            if descriptor.type == FieldDescriptor.TYPE_MESSAGE and len(mine) == len(theirs):
                for position, (left, right) in enumerate(zip(mine, theirs, strict=True)):
                    if left != right:
                        return _difference(left, right, f"{name}[{position}].")
            return name, _shown(descriptor, list(mine)), _shown(descriptor, list(theirs))
        if descriptor.type == FieldDescriptor.TYPE_MESSAGE:
            present = (want.HasField(descriptor.name), got.HasField(descriptor.name))
            if present == (False, False) or mine == theirs:
                continue
            if all(present):
                return _difference(mine, theirs, f"{name}.")
            return (name, _shown(descriptor, mine) if present[0] else "nothing",
                    _shown(descriptor, theirs) if present[1] else "nothing")
        if mine != theirs:
            return name, _shown(descriptor, mine), _shown(descriptor, theirs)
    return path.rstrip(".") or "the event", "", "other bytes"  # unknown fields only


def _shown(descriptor: FieldDescriptor, value: Any) -> str:
    """A field's value as a finding quotes it."""
    if isinstance(value, list):
        text = "[" + ", ".join(_shown(descriptor, item) for item in value) + "]"
    elif isinstance(value, Message):
        text = "{" + text_format.MessageToString(value, as_one_line=True) + "}"
    elif isinstance(value, bytes):
        text = short_hex(value) if value else "empty"
    elif descriptor.type == FieldDescriptor.TYPE_ENUM:
        number = descriptor.enum_type.values_by_number.get(value)
        text = number.name if number is not None else str(value)
    else:
        text = str(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}…"


def check_receipts(
    entries: Sequence[log_pb2.LogEntry], receipts: Sequence[Receipt]
) -> list[Finding]:
    """Compare a log with the chain hashes a seat was sent; one finding per receipt the
    log does not match (a seq it lacks, or another hash). Empty when every receipt matches.

    A seat's receipts were handed out while the match ran, before anyone could know how
    the log would be edited: a log rewritten afterwards (and its chain recomputed, and even
    signed again) differs from them from the first changed event on.
    """
    by_seq = {entry.event.seq: entry.hash for entry in entries}
    findings = []
    for receipt in receipts:
        stored = by_seq.get(receipt.seq)
        if stored is None:
            findings.append(Finding(
                Check.RECEIPTS, "receipt_missing",
                f"receipt for seq {receipt.seq}: the log has no such event",
                seq=receipt.seq, expected=f"an event with hash {short_hex(receipt.hash)}",
                found="no event",
            ))
        elif not hmac.compare_digest(stored, receipt.hash):
            findings.append(Finding(
                Check.RECEIPTS, "receipt_differs",
                f"receipt for seq {receipt.seq}: the log's hash differs from the one the "
                "seat was sent: the log was rewritten from there on",
                seq=receipt.seq, expected=short_hex(receipt.hash), found=short_hex(stored),
            ))
    return findings
