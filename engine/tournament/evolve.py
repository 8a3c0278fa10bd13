"""``evolve`` and ``replay``: apply recorded events to the tournament's state.

``evolve`` trusts its input (``decide`` checked the rules when it made the events); it
checks that seqs follow each other and that the first event creates the tournament. Events
carry every decision explicitly (tables, seats, winners, standings), so replay never needs
the seed: a redacted log replays like the full one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from engine.core.errors import Code, InvalidCommand
from engine.tournament.model import (
    AbsenceChanged,
    EntrantRegistered,
    EntrantWithdrew,
    Event,
    FeaturedChanged,
    Format,
    PartnerAsked,
    Phase,
    Record,
    ResultRecorded,
    RoundEnded,
    RoundStarted,
    TournamentCancelled,
    TournamentCreated,
    TournamentEnded,
    TournamentStarted,
    TournamentState,
)
from engine.tournament.options import entrants_per_table
from engine.tournament.pairing import round_robin_schedule
from engine.tournament.standings import match_points_for


def evolve(state: TournamentState | None, event: Event) -> TournamentState:
    """The state after ``event``.

    :raises InvalidCommand: if the event does not follow ``state`` (wrong seq, a first event
        that does not create a tournament, or facts about unknown entrants or tables).
    """
    try:
        return _apply(state, event)
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise InvalidCommand(
            Code.MALFORMED_COMMAND, f"event seq {event.seq} does not fit the log: {error!r}"
        ) from None


def _apply(state: TournamentState | None, event: Event) -> TournamentState:
    body = event.body
    if state is None:
        if event.seq != 1 or not isinstance(body, TournamentCreated):
            raise InvalidCommand(
                Code.MALFORMED_COMMAND, "a tournament log starts with its creation"
            )
        return TournamentState(
            seq=1,
            tournament_id=body.tournament_id,
            options=body.options,
            commitment=body.commitment,
            seed=body.seed,
            phase=Phase.REGISTRATION,
            entrants={},
            withdrawn=frozenset(),
            absent=frozenset(),
        )
    if event.seq != state.seq + 1:
        raise InvalidCommand(
            Code.MALFORMED_COMMAND, f"event seq {event.seq} does not follow {state.seq}"
        )
    seq = event.seq
    if isinstance(body, EntrantRegistered):
        entrants = dict(state.entrants)
        entrants[body.entrant.entrant_id] = body.entrant
        members = body.entrant.members
        # An ask by or for a player now entered can never be answered: it lapses.
        asks = {
            player: ask for player, ask in state.partner_asks.items()
            if player not in members and ask.partner_id not in members
        }
        return _replace(state, seq=seq, entrants=entrants, partner_asks=asks)
    if isinstance(body, PartnerAsked):
        asks = {k: v for k, v in state.partner_asks.items() if k != body.player_id}
        if body.partner_id:
            asks[body.player_id] = body
        return _replace(state, seq=seq, partner_asks=asks)
    if isinstance(body, EntrantWithdrew):
        if state.phase is Phase.REGISTRATION:
            entrants = {k: v for k, v in state.entrants.items() if k != body.entrant_id}
            return _replace(state, seq=seq, entrants=entrants)
        return _replace(state, seq=seq, withdrawn=state.withdrawn | {body.entrant_id})
    if isinstance(body, AbsenceChanged):
        absent = state.absent | {body.player_id} if body.absent else state.absent - {
            body.player_id
        }
        return _replace(state, seq=seq, absent=absent)
    if isinstance(body, FeaturedChanged):
        return _replace(state, seq=seq, featured=body.featured)
    if isinstance(body, TournamentCancelled):
        return _replace(state, seq=seq, cancelled=True)
    if isinstance(body, TournamentStarted):
        schedule: tuple[tuple[tuple[str, ...], ...], ...] = ()
        if state.options.format is Format.ROUND_ROBIN:
            schedule = tuple(
                tuple(tables)
                for tables in round_robin_schedule(
                    body.entrants, entrants_per_table(state.options)
                )
            )
        return _replace(
            state,
            seq=seq,
            phase=Phase.RUNNING,
            seed_order=body.entrants,
            lot=body.lot,
            rounds_planned=body.rounds,
            records={entrant: Record() for entrant in body.entrants},
            alive=tuple(e for e in body.entrants if e not in state.withdrawn),
            schedule=schedule,
        )
    if isinstance(body, RoundStarted):
        records = state.records
        if body.byes:
            records = dict(records)
            for entrant in body.byes:
                record = records[entrant]
                records[entrant] = replace(
                    record,
                    byes=record.byes + 1,
                    match_points=record.match_points + state.options.bye_points,
                )
        return _replace(
            state,
            seq=seq,
            round=body.round,
            tables=body.tables,
            byes=body.byes,
            deadline_ms=body.deadline_ms,
            results={},
            records=records,
        )
    if isinstance(body, ResultRecorded):
        return _result(state, seq, body)
    if isinstance(body, RoundEnded):
        records, met = fold_round(state)
        alive = tuple(e for e in state.alive if e not in state.withdrawn)
        eliminated = state.eliminated
        if state.options.format is Format.KNOCKOUT:
            advancing = frozenset(body.advancing)
            eliminated = dict(eliminated)
            for entrant in state.alive:
                if entrant not in advancing:
                    eliminated[entrant] = body.round
            alive = tuple(e for e in state.alive if e in advancing)
        return _replace(
            state,
            seq=seq,
            records=records,
            met=met,
            alive=alive,
            eliminated=eliminated,
            standings=body.standings,
        )
    if isinstance(body, TournamentEnded):
        return _replace(
            state,
            seq=seq,
            phase=Phase.FINISHED,
            standings=body.standings,
            seed=body.seed,
            tables=(),
            byes=(),
            deadline_ms=0,
        )
    raise InvalidCommand(Code.MALFORMED_COMMAND, f"event seq {event.seq} holds no known fact")


def _result(state: TournamentState, seq: int, body: ResultRecorded) -> TournamentState:
    if not 0 <= body.table < len(state.tables):
        raise IndexError(f"no table {body.table} in round {state.round}")
    results = dict(state.results)
    results[body.table] = body
    return _replace(state, seq=seq, results=results)


def fold_round(state: TournamentState) -> tuple[dict[str, Record], dict[str, frozenset[str]]]:
    """The records and meetings after adding the current round's results (done once, when
    the round ends, rather than at every result: a result then costs little however big
    the field)."""
    options = state.options
    records = dict(state.records)
    met = dict(state.met)
    for table in state.tables:
        recorded = state.results[table.table]
        everyone = table.entrants
        for side, outcome in enumerate(recorded.sides):
            points = match_points_for(options, recorded.winners, side)
            won_alone = len(recorded.winners) == 1 and side in recorded.winners
            on_side = table.side_entrants(side)
            others = tuple(e for e in everyone if e not in on_side)
            for entrant in on_side:
                record = records[entrant]
                records[entrant] = Record(
                    match_points=record.match_points + points,
                    points=record.points + outcome.points,
                    tricks=record.tricks + outcome.tricks,
                    wins=record.wins + (1 if won_alone else 0),
                    played=record.played + 1,
                    byes=record.byes,
                    opponents=record.opponents + others,
                )
        for entrant in everyone:
            met[entrant] = met.get(entrant, frozenset()) | {e for e in everyone if e != entrant}
    return records, met


def _replace(state: TournamentState, **changes: object) -> TournamentState:
    return replace(state, **changes)  # type: ignore[arg-type]


def replay(events: Iterable[Event]) -> TournamentState:
    """The state after every event of a log, in order.

    :raises InvalidCommand: if the log is empty or its events do not follow each other.
    """
    state: TournamentState | None = None
    for event in events:
        state = evolve(state, event)
    if state is None:
        raise InvalidCommand(Code.MALFORMED_COMMAND, "an empty log holds no tournament")
    return state
