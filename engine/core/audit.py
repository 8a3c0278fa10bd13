"""Audit a finished match's log: the hash chain, the seed commitment and every deal.

The audit re-runs the whole match: it calls the game's ``start`` with the arguments the
first event records and the server seed the last event reveals, then feeds ``decide`` the
command each player-caused event records, and compares every event it gets with the log,
byte for byte. A rigged deal, an edited card or a forged score therefore all show up as the
first event that differs. The games come from :mod:`engine.registry` with seat control added
(:mod:`engine.core.control`), so a seat taken over by a bot and handed back is re-derived
the same way: a takeover of a seat a bot already held, or a game move renumbered around
one, differs too.

What the chain alone cannot show (the operator can recompute it) comes from outside the
log: :func:`check_receipts` compares the log with the hashes a seat was sent during the
match, and :mod:`engine.core.seal` checks the server's signature over the head. A match
whose server seed an admin chose is reported (``server_seed_chosen``): its deals are
re-derivable like any other, but the operator knew them in advance.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

from dast.v1 import log_pb2
from engine.core.chain import canonical_bytes, find_chain_break
from engine.core.errors import RuleViolation
from engine.core.fairness import is_commitment_of
from engine.core.logformat import Receipt
from engine.core.protocol import Game, MatchSetup


@dataclass(slots=True)
class AuditReport:
    """The outcome of :func:`audit_log`; ``ok`` when no problem was found."""

    events: int = 0
    problems: list[str] = field(default_factory=list)
    chain_ok: bool = False
    commitment_ok: bool = False
    deals_ok: bool = False
    server_seed_chosen: bool = False
    """The first event records that an admin chose the server seed (a warning, not a fault)."""

    @property
    def ok(self) -> bool:
        return not self.problems and self.chain_ok and self.commitment_ok and self.deals_ok


def audit_log(entries: Sequence[log_pb2.LogEntry]) -> AuditReport:
    """Verify a finished match's full (unredacted) log."""
    from engine.registry import game_of_event  # the registry imports every game

    report = AuditReport(events=len(entries))
    if not entries:
        report.problems.append("the log is empty")
        return report
    chain_break = find_chain_break(entries)
    if chain_break is None:
        report.chain_ok = True
    else:
        report.problems.append(f"hash chain broken: {chain_break.reason}")

    events = [entry.event for entry in entries]
    try:
        game = game_of_event(events[0])
        setup = game.setup_of(events[0])
    except (RuleViolation, ValueError) as error:
        report.problems.append(f"the first event is not a match start: {error}")
        return report
    report.server_seed_chosen = setup.server_seed_chosen
    seed = game.revealed_seed(events[-1])
    if seed is None:
        report.problems.append("the last event reveals no server seed: is the match finished?")
        return report
    if is_commitment_of(setup.server_seed_commitment, seed):
        report.commitment_ok = True
    else:
        report.problems.append("the revealed server seed does not match the commitment")
        return report
    problem = _rerun(game, setup, seed, events)
    if problem is None:
        report.deals_ok = True
    else:
        report.problems.append(problem)
    return report


def _rerun(g: Game, setup: MatchSetup, seed: bytes, events: list[log_pb2.Event]) -> str | None:
    try:
        expected = g.start(
            setup.rules, seed, setup.players, at_ms=events[0].at_ms,
            server_seed_chosen=setup.server_seed_chosen,
        )
    except RuleViolation as error:
        return f"the recorded setup cannot start a match: {error}"
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
        command = g.command_for(events[index])
        if command is None:
            return f"seq {events[index].seq}: an event the rules did not cause by themselves"
        try:
            expected = g.decide(state, command)
        except RuleViolation as error:
            return f"seq {events[index].seq}: the recorded move breaks a rule ({error.code})"
        if not expected:
            return f"seq {events[index].seq}: the recorded move produced no event"


def _compare(expected: list[log_pb2.Event], events: list[log_pb2.Event], index: int) -> str | None:
    for offset, want in enumerate(expected):
        if index + offset >= len(events):
            return f"the log ends at seq {len(events)} where the rules continue"
        got = events[index + offset]
        if canonical_bytes(got) != canonical_bytes(want):
            return f"seq {got.seq}: the log differs from the re-derived event"
    return None


def check_receipts(
    entries: Sequence[log_pb2.LogEntry], receipts: Sequence[Receipt]
) -> list[str]:
    """Compare a log with the chain hashes a seat was sent; one problem per receipt the
    log does not match (a seq it lacks, or another hash). Empty when every receipt matches.

    A seat's receipts were handed out while the match ran, before anyone could know how
    the log would be edited: a log rewritten afterwards (and its chain recomputed, and even
    signed again) differs from them from the first changed event on.
    """
    by_seq = {entry.event.seq: entry.hash for entry in entries}
    problems = []
    for receipt in receipts:
        stored = by_seq.get(receipt.seq)
        if stored is None:
            problems.append(f"receipt for seq {receipt.seq}: the log has no such event")
        elif not hmac.compare_digest(stored, receipt.hash):
            problems.append(f"receipt for seq {receipt.seq}: the log's hash differs")
    return problems
