"""Every check of an exported log, in one place: what ``dast verify``, ``dast audit`` and the
game service's ``AuditService`` all run.

:func:`verify_export` takes a log's entries, its seal (if any), the key to trust and a
seat's receipts, and runs, in order:

- **hash chain**, **seed commitment**, **deals and moves** (:func:`engine.core.audit.audit_log`);
- **seal**: the Ed25519 signature over the log's head (:mod:`engine.core.seal`), under the
  trusted key when one is given (a key read from the export itself only shows that whoever
  made the file signed it: that is a warning, not a pass);
- **receipts**: the log holds every hash the seat was sent
  (:func:`engine.core.audit.check_receipts`).

The :class:`Verification` it returns says, per check, whether it passed, failed or was
skipped, and lists every :class:`~engine.core.audit.Finding` in plain words. Callers only
present it; none decides anything of its own.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from dast.v1 import audit_pb2, log_pb2
from engine.core.audit import AuditReport, Check, Finding, audit_log, check_receipts, short_hex
from engine.core.logformat import Receipt
from engine.core.seal import SealProblem, seal_covers, verify_seal


class Outcome(StrEnum):
    """How one check ended."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    """Not run: an earlier check made it meaningless, nothing was given to check (no
    receipts), or a missing seal was accepted."""


def _seal_finding(problem: SealProblem, seal: log_pb2.LogSeal | None,
                  entries: Sequence[log_pb2.LogEntry], trusted_key: bytes | None,
                  trusted_key_name: str) -> Finding:
    """A seal problem in plain words (``trusted_key``: the key the seal had to be made
    with, for an untrusted one)."""
    code = str(problem)
    if problem is SealProblem.MISSING or seal is None:
        return Finding(Check.SEAL, code, "the log carries no seal: nobody vouches for it")
    if problem is SealProblem.MALFORMED:
        return Finding(
            Check.SEAL, code, "the seal's key or signature has the wrong length",
            expected="a 32-byte key and a 64-byte signature",
            found=f"a {len(seal.public_key)}-byte key and a {len(seal.signature)}-byte "
                  "signature",
        )
    if problem is SealProblem.BAD_SIGNATURE:
        return Finding(Check.SEAL, code,
                       f"seq {seal.seq}: the seal's signature does not match the log's head",
                       seq=seal.seq, expected="a signature by the seal's key",
                       found="a signature that does not verify")
    if problem is SealProblem.WRONG_HEAD:
        last = entries[-1] if entries else None
        return Finding(
            Check.SEAL, code,
            "the seal names another seq or hash than the log's last entry: events were "
            "added, dropped or changed after it was signed",
            seq=last.event.seq if last is not None else None,
            expected=(f"seq {last.event.seq}, hash {short_hex(last.hash)}"
                      if last is not None else "a log"),
            found=f"seq {seal.seq}, hash {short_hex(seal.head_hash)}",
        )
    return Finding(
        Check.SEAL, code, f"the seal was made with another key than {trusted_key_name}",
        expected=f"key {_key_text(trusted_key)}", found=f"key {_key_text(seal.public_key)}",
    )


def _key_text(key: bytes | None) -> str:
    """A public key as ``dast signing-key`` prints it (base64)."""
    return base64.b64encode(key).decode() if key else "(none)"


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of :func:`verify_export`."""

    log: AuditReport
    outcomes: dict[Check, Outcome]
    """Every check, in the order they run."""
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...]
    receipts_checked: int
    receipts_matched: int
    seal_key: bytes | None
    """The key that made a good seal (None when there is no good seal)."""

    @property
    def events(self) -> int:
        return self.log.events

    @property
    def ok(self) -> bool:
        """Every check passed or was skipped as allowed, and nothing was found."""
        return not self.findings and Outcome.FAILED not in self.outcomes.values()

    def summary(self, check: Check) -> str:
        """One line in plain words on how ``check`` ended."""
        outcome = self.outcomes[check]
        if check is Check.RECEIPTS:
            if outcome is Outcome.SKIPPED:
                return "no receipts given"
            return f"{self.receipts_matched} of {self.receipts_checked} receipts match"
        if check is Check.SEAL and outcome is Outcome.SKIPPED:
            return "absent (accepted)"
        if outcome is Outcome.SKIPPED:
            return "not checked: an earlier check failed"
        failed = [f for f in self.findings if f.check is check]
        if not failed:
            return str(outcome)
        where = [f.seq for f in failed if f.seq is not None]
        count = f"{len(failed)} problem{'s' if len(failed) != 1 else ''}"
        return f"{count}, the first at seq {where[0]}" if where else count


def verify_export(
    entries: Sequence[log_pb2.LogEntry],
    seal: log_pb2.LogSeal | None,
    *,
    trusted_key: bytes | None = None,
    trusted_key_name: str = "the trusted key",
    receipts: Sequence[Receipt] = (),
    accept_unsealed: bool = False,
) -> Verification:
    """Run every check on an exported log (see the module docstring).

    ``trusted_key``: the server's raw Ed25519 public key, obtained from the server (None:
    the seal's own key, with a warning); ``trusted_key_name`` names it in findings.
    ``accept_unsealed``: a log without a seal passes (``dast sim`` exports, older files).
    """
    report = audit_log(entries)
    findings = list(report.findings)
    outcomes = {
        Check.CHAIN: Outcome.PASSED if report.chain_ok else Outcome.FAILED,
        Check.COMMITMENT: _outcome(report.commitment_ok, report, Check.COMMITMENT),
        Check.DEALS: _outcome(report.deals_ok, report, Check.DEALS),
    }

    problem: SealProblem | None
    if seal is None:
        problem = None if accept_unsealed else SealProblem.MISSING
    elif not seal_covers(seal, entries):
        problem = SealProblem.WRONG_HEAD
    else:
        problem = verify_seal(seal, trusted_key)
    if problem is not None:
        findings.append(_seal_finding(problem, seal, entries, trusted_key, trusted_key_name))
        outcomes[Check.SEAL] = Outcome.FAILED
    else:
        outcomes[Check.SEAL] = Outcome.SKIPPED if seal is None else Outcome.PASSED

    receipt_findings = check_receipts(entries, receipts)
    findings.extend(receipt_findings)
    if not receipts:
        outcomes[Check.RECEIPTS] = Outcome.SKIPPED
    else:
        outcomes[Check.RECEIPTS] = Outcome.FAILED if receipt_findings else Outcome.PASSED

    warnings = []
    if report.server_seed_chosen:
        warnings.append("an admin chose this match's server seed: the operator knew every "
                        "deal in advance")
    good_seal = seal if seal is not None and problem is None else None
    if good_seal is not None and trusted_key is None:
        key = base64.b64encode(good_seal.public_key).decode()
        warnings.append(f"sealed by key {key}, taken from the file itself: compare it with "
                        "the server's (GetSigningKey)")
    return Verification(
        log=report, outcomes=outcomes, findings=tuple(findings), warnings=tuple(warnings),
        receipts_checked=len(receipts), receipts_matched=len(receipts) - len(receipt_findings),
        seal_key=good_seal.public_key if good_seal is not None else None,
    )


_CHECKS = {
    Check.CHAIN: audit_pb2.AUDIT_CHECK_CHAIN,
    Check.COMMITMENT: audit_pb2.AUDIT_CHECK_COMMITMENT,
    Check.DEALS: audit_pb2.AUDIT_CHECK_DEALS,
    Check.SEAL: audit_pb2.AUDIT_CHECK_SEAL,
    Check.RECEIPTS: audit_pb2.AUDIT_CHECK_RECEIPTS,
}
_OUTCOMES = {
    Outcome.PASSED: audit_pb2.AUDIT_OUTCOME_PASSED,
    Outcome.FAILED: audit_pb2.AUDIT_OUTCOME_FAILED,
    Outcome.SKIPPED: audit_pb2.AUDIT_OUTCOME_SKIPPED,
}
CHECK_OF_MESSAGE = {number: check for check, number in _CHECKS.items()}
""":class:`Check` by its ``dast.v1.AuditCheck`` number."""
OUTCOME_OF_MESSAGE = {number: outcome for outcome, number in _OUTCOMES.items()}
""":class:`Outcome` by its ``dast.v1.AuditOutcome`` number."""


def report_message(verification: Verification) -> audit_pb2.AuditReport:
    """A verification as ``dast.v1.AuditReport`` (audit.proto), for the wire and for the
    one renderer of ``dast audit``."""
    report = audit_pb2.AuditReport(
        verified=verification.ok, events=verification.events,
        warnings=verification.warnings,
    )
    for check, outcome in verification.outcomes.items():
        report.checks.add(check=_CHECKS[check], outcome=_OUTCOMES[outcome],
                          summary=verification.summary(check))
    for finding in verification.findings:
        message = report.findings.add(
            check=_CHECKS[finding.check], code=finding.code, message=finding.message,
            expected=finding.expected, found=finding.found,
        )
        if finding.seq is not None:
            message.seq = finding.seq
    return report


def _outcome(passed: bool, report: AuditReport, check: Check) -> Outcome:
    if passed:
        return Outcome.PASSED
    if any(finding.check is check for finding in report.findings):
        return Outcome.FAILED
    return Outcome.SKIPPED
