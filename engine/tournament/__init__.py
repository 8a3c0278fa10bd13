"""The tournament engine: a tournament as an event log, decided purely and deterministically.

Start with :mod:`engine.tournament.model` (every type, and what each one means). The
functions, in the style of the game engines:

* :func:`create` — the first event of a tournament (options, commitment to the seed);
* :func:`decide` — the events a command causes, or a ``RuleViolation``;
* :func:`evolve` / :func:`replay` — apply events to the state;
* :func:`verify` — audit a finished log: the commitment, every random choice, every
  standing (``[]`` when it holds, else the problems found);
* :func:`redact` — an event as the public may see it (the seed blanked until the end);
* :func:`encode_event` / :func:`decode_event` — canonical JSON bytes for storage and the wire;
* :func:`hokm_spec` / :func:`hand_spec` — the variant descriptions of the served games.

docs/tournaments.md describes the formats, options, tie-breaks, byes and time-limit rules.
"""

from engine.tournament.audit import AuditCode, AuditProblem, command_for, redact, verify
from engine.tournament.codec import decode_event, encode_event
from engine.tournament.decide import create, decide
from engine.tournament.errors import TournamentCode
from engine.tournament.evolve import evolve, replay
from engine.tournament.model import (
    AbsenceChanged,
    AskPartner,
    Cancel,
    Command,
    Entrant,
    EntrantRegistered,
    EntrantWithdrew,
    Entry,
    Event,
    EventBody,
    Feature,
    FeaturedChanged,
    Format,
    PartnerAsked,
    Phase,
    Record,
    Register,
    ReportResult,
    ResultRecorded,
    ResultSource,
    RoundEnded,
    RoundStarted,
    Seat,
    Seeding,
    SetAbsent,
    SideResult,
    Standing,
    Start,
    Table,
    TieBreak,
    TournamentCancelled,
    TournamentCreated,
    TournamentEnded,
    TournamentOptions,
    TournamentStarted,
    TournamentState,
    VariantSpec,
    Withdraw,
)
from engine.tournament.options import resolve_options
from engine.tournament.variants import hand_spec, hokm_spec

__all__ = [
    "AbsenceChanged",
    "AskPartner",
    "AuditCode",
    "AuditProblem",
    "Cancel",
    "Command",
    "Entrant",
    "EntrantRegistered",
    "EntrantWithdrew",
    "Entry",
    "Event",
    "EventBody",
    "Feature",
    "FeaturedChanged",
    "Format",
    "PartnerAsked",
    "Phase",
    "Record",
    "Register",
    "ReportResult",
    "ResultRecorded",
    "ResultSource",
    "RoundEnded",
    "RoundStarted",
    "Seat",
    "Seeding",
    "SetAbsent",
    "SideResult",
    "Standing",
    "Start",
    "Table",
    "TieBreak",
    "TournamentCancelled",
    "TournamentCode",
    "TournamentCreated",
    "TournamentEnded",
    "TournamentOptions",
    "TournamentStarted",
    "TournamentState",
    "VariantSpec",
    "Withdraw",
    "command_for",
    "create",
    "decide",
    "decode_event",
    "encode_event",
    "evolve",
    "hand_spec",
    "hokm_spec",
    "redact",
    "replay",
    "resolve_options",
    "verify",
]
