"""Audit a tournament log like a game's: the seed's commitment, every random choice, every
ruling and every standing, re-derived.

A log is a chain of commands and their consequences. :func:`command_for` recovers the
command behind each event that starts a command's batch (a registration, a withdrawal, an
absence, a change of featuring, a cancellation, the start, a result); :func:`verify`
replays the log by deciding each of those commands again, with the seed revealed in the
last event, and requires the events it gets to be exactly the events logged. A changed
seed breaks the commitment; a changed result, seating, pairing, bye, ruling or standing
makes the re-decided events differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from engine.core.errors import RuleViolation
from engine.core.fairness import is_commitment_of
from engine.tournament.decide import create, decide
from engine.tournament.evolve import evolve
from engine.tournament.model import (
    AbsenceChanged,
    AskPartner,
    Cancel,
    Command,
    EntrantRegistered,
    EntrantWithdrew,
    Event,
    Feature,
    FeaturedChanged,
    PartnerAsked,
    Register,
    ReportResult,
    ResultRecorded,
    SetAbsent,
    Start,
    TournamentCancelled,
    TournamentCreated,
    TournamentEnded,
    TournamentStarted,
    TournamentState,
    Withdraw,
)


class AuditCode(StrEnum):
    """Why a log does not verify (stable codes)."""

    EMPTY = "audit_empty"
    NOT_CREATED = "audit_not_created"
    NOT_FINISHED = "audit_not_finished"
    COMMITMENT_MISMATCH = "audit_commitment_mismatch"
    CREATION_MISMATCH = "audit_creation_mismatch"
    ORPHAN_EVENT = "audit_orphan_event"
    REFUSED = "audit_refused"
    DIVERGED = "audit_diverged"
    TRUNCATED = "audit_truncated"


@dataclass(frozen=True, slots=True)
class AuditProblem:
    """One reason a log does not verify."""

    code: AuditCode
    seq: int
    """The seq of the first event concerned (0: the log as a whole)."""
    message: str


def redact(event: Event) -> Event:
    """``event`` as anyone but the server may see it: the creation's seed blanked (it is
    revealed by the last event)."""
    body = event.body
    if isinstance(body, TournamentCreated) and body.seed:
        return dataclasses.replace(event, body=dataclasses.replace(body, seed=b""))
    return event


def command_for(event: Event) -> Command | None:
    """The command whose batch ``event`` opens (None for the creation and for the events
    that follow from a command: round starts and ends, the end)."""
    body = event.body
    at_ms = event.at_ms
    if isinstance(body, EntrantRegistered):
        entrant = body.entrant
        return Register(
            entrant_id=entrant.entrant_id,
            members=entrant.members,
            rating=entrant.rating,
            name=entrant.name,
            at_ms=at_ms,
        )
    if isinstance(body, PartnerAsked):
        return AskPartner(
            player_id=body.player_id, partner_id=body.partner_id, name=body.name, at_ms=at_ms
        )
    if isinstance(body, EntrantWithdrew):
        return Withdraw(entrant_id=body.entrant_id, at_ms=at_ms)
    if isinstance(body, AbsenceChanged):
        return SetAbsent(player_id=body.player_id, absent=body.absent, at_ms=at_ms)
    if isinstance(body, FeaturedChanged):
        return Feature(featured=body.featured, at_ms=at_ms)
    if isinstance(body, TournamentCancelled):
        return Cancel(at_ms=at_ms)
    if isinstance(body, TournamentStarted):
        return Start(at_ms=at_ms)
    if isinstance(body, ResultRecorded):
        return ReportResult(
            round=body.round,
            table=body.table,
            sides=body.sides,
            winners=body.reported_winners,
            timed_out=body.timed_out,
            at_ms=at_ms,
        )
    return None


def verify(events: Sequence[Event]) -> list[AuditProblem]:
    """The problems of a finished tournament log (redacted or not); ``[]`` when it verifies.

    Checks that the log opens with a creation and closes with the end, that the revealed
    seed is the one committed to (and the one recorded, if the log holds it), and that
    deciding every command again with that seed yields exactly the logged events.
    """
    if not events:
        return [AuditProblem(AuditCode.EMPTY, 0, "the log is empty")]
    first, last = events[0], events[-1]
    if not isinstance(first.body, TournamentCreated) or first.seq != 1:
        return [AuditProblem(AuditCode.NOT_CREATED, first.seq, "the log opens with no creation")]
    if not isinstance(last.body, TournamentEnded):
        return [AuditProblem(AuditCode.NOT_FINISHED, last.seq, "the tournament has not ended")]
    created = first.body
    seed = last.body.seed
    if not is_commitment_of(created.commitment, seed):
        return [
            AuditProblem(
                AuditCode.COMMITMENT_MISMATCH,
                last.seq,
                "the revealed seed is not the one the creation committed to",
            )
        ]
    if created.seed and created.seed != seed:
        return [
            AuditProblem(AuditCode.COMMITMENT_MISMATCH, 1, "the recorded seed is not revealed")
        ]
    try:
        expected_first = create(created.tournament_id, created.options, seed, at_ms=first.at_ms)
    except RuleViolation as error:
        return [AuditProblem(AuditCode.CREATION_MISMATCH, 1, str(error))]
    if redact(expected_first[0]) != redact(first):
        return [
            AuditProblem(
                AuditCode.CREATION_MISMATCH, 1, "the options are not as creation resolves them"
            )
        ]
    state: TournamentState = evolve(None, expected_first[0])
    index = 1
    while index < len(events):
        event = events[index]
        command = command_for(event)
        if command is None:
            return [
                AuditProblem(
                    AuditCode.ORPHAN_EVENT, event.seq, "no command starts with this event"
                )
            ]
        try:
            expected = decide(state, command)
        except RuleViolation as error:
            return [AuditProblem(AuditCode.REFUSED, event.seq, f"{error.code}: {error.message}")]
        if not expected:
            return [
                AuditProblem(
                    AuditCode.DIVERGED, event.seq, "the rules give no event for this command"
                )
            ]
        logged = events[index : index + len(expected)]
        for want, got in zip(expected, logged, strict=False):
            if want != got:
                return [
                    AuditProblem(
                        AuditCode.DIVERGED,
                        got.seq,
                        f"the log says {type(got.body).__name__} where the rules give "
                        f"{type(want.body).__name__} (or the same with other content)",
                    )
                ]
        if len(logged) < len(expected):
            return [
                AuditProblem(
                    AuditCode.TRUNCATED, event.seq, "the log stops inside a command's events"
                )
            ]
        for want in expected:
            state = evolve(state, want)
        index += len(expected)
    return []
