"""``create`` and ``decide``: the checked edge of the tournament engine.

``decide`` validates a command completely, then builds the events it causes, applying each
to a working copy of the state so that what follows (the end of a round, the next round's
tables, the end of the tournament) sees the facts before it. Every random choice is drawn
from the seed with :class:`~engine.core.rng.DeterministicRandom`, under a label naming the
choice (docs/tournaments.md "The seed and the audit"):

``lot``                         the lot, the last tie-break (registration order shuffled)
``seeding``                     the seed order when seeding is random
``round/<r>/order``             Swiss: the order among entrants on equal match points
``round/<r>/table/<t>/seating`` who sits where (and so who partners whom) at a table
``round/<r>/table/<t>/ruling``  the draw that settles a tie the rules cannot
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.core.fairness import commit
from engine.core.rng import DeterministicRandom
from engine.tournament.errors import TournamentCode
from engine.tournament.evolve import evolve, fold_round
from engine.tournament.model import (
    MAX_ID_LENGTH,
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
    Start,
    Table,
    TournamentCancelled,
    TournamentCreated,
    TournamentEnded,
    TournamentOptions,
    TournamentStarted,
    TournamentState,
    Withdraw,
)
from engine.tournament.options import (
    entrants_per_table,
    members_per_entrant,
    resolve_options,
)
from engine.tournament.pairing import fold, group_swiss, round_robin_schedule, slide
from engine.tournament.standings import compute_standings

MIN_SEED_BYTES: Final = 16
MAX_SEED_BYTES: Final = 64
MAX_RESULT_VALUE: Final = 1_000_000
"""The largest points or tricks a side may report (in absolute value)."""
MAX_RATING: Final = 1_000_000
MAX_NAME_LENGTH: Final = 128


class _Batch:
    """The events of one command, applied one by one to a working state."""

    __slots__ = ("at_ms", "events", "state")

    def __init__(self, state: TournamentState, at_ms: int) -> None:
        self.state = state
        self.at_ms = at_ms
        self.events: list[Event] = []

    def emit(self, body: EventBody) -> TournamentState:
        event = Event(seq=self.state.seq + 1, at_ms=self.at_ms, body=body)
        self.events.append(event)
        self.state = evolve(self.state, event)
        return self.state


def _check_id(value: object, what: str) -> str:
    if (
        not isinstance(value, str)
        or not value
        or len(value) > MAX_ID_LENGTH
        or not value.isprintable()
    ):
        raise InvalidCommand(
            TournamentCode.INVALID_ID,
            f"{what} must be 1..{MAX_ID_LENGTH} printable characters, got {value!r}",
        )
    return value


def _check_time(at_ms: object) -> int:
    if not isinstance(at_ms, int) or isinstance(at_ms, bool) or at_ms < 0:
        raise InvalidCommand(Code.MALFORMED_COMMAND, "at_ms must be a non-negative int")
    return at_ms


def create(
    tournament_id: str, options: TournamentOptions, seed: bytes, *, at_ms: int = 0
) -> list[Event]:
    """The first event of a tournament: its resolved options and the commitment to ``seed``
    (16..64 secret random bytes, e.g. ``secrets.token_bytes(32)``; keep it with the log).

    :raises InvalidCommand: for a bad id, seed or options.
    """
    _check_id(tournament_id, "the tournament id")
    if not isinstance(seed, bytes) or not MIN_SEED_BYTES <= len(seed) <= MAX_SEED_BYTES:
        raise InvalidCommand(
            TournamentCode.INVALID_SEED,
            f"the seed must be {MIN_SEED_BYTES}..{MAX_SEED_BYTES} bytes",
        )
    resolved = resolve_options(options)
    body = TournamentCreated(
        tournament_id=tournament_id, options=resolved, commitment=commit(seed), seed=seed
    )
    return [Event(seq=1, at_ms=_check_time(at_ms), body=body)]


def decide(state: TournamentState, command: Command) -> list[Event]:
    """The events ``command`` causes in ``state`` (possibly none: marking a player absent
    who already is).

    :raises RuleViolation: (or its subclass ``InvalidCommand``) with a
        :class:`TournamentCode` when the command is refused.
    """
    at_ms = _check_time(getattr(command, "at_ms", None))
    if state.phase is Phase.FINISHED:
        raise RuleViolation(TournamentCode.FINISHED, "the tournament is over")
    if not state.seed:
        raise RuleViolation(
            TournamentCode.INVALID_SEED, "the state holds no seed (built from a redacted log)"
        )
    batch = _Batch(state, at_ms)
    if isinstance(command, Register):
        _register(batch, command)
    elif isinstance(command, AskPartner):
        _ask_partner(batch, command)
    elif isinstance(command, Withdraw):
        _withdraw(batch, command)
    elif isinstance(command, SetAbsent):
        _set_absent(batch, command)
    elif isinstance(command, Feature):
        if bool(command.featured) != state.featured:
            batch.emit(FeaturedChanged(featured=bool(command.featured)))
    elif isinstance(command, Cancel):
        _cancel(batch)
    elif isinstance(command, Start):
        _start(batch)
    elif isinstance(command, ReportResult):
        _report(batch, command)
    else:
        raise InvalidCommand(Code.MALFORMED_COMMAND, f"unknown command {command!r}")
    return batch.events


# --- registration -------------------------------------------------------------------------


def _check_registration_open(batch: _Batch) -> None:
    state = batch.state
    if state.phase is not Phase.REGISTRATION:
        raise RuleViolation(TournamentCode.REGISTRATION_CLOSED, "the tournament has started")
    closes = state.options.registration_closes_at_ms
    if closes and batch.at_ms >= closes:
        raise RuleViolation(TournamentCode.REGISTRATION_CLOSED, "registration has closed")


def _check_not_entered(state: TournamentState, player_id: str) -> None:
    if any(player_id in entrant.members for entrant in state.entrants.values()):
        raise RuleViolation(
            TournamentCode.PLAYER_ALREADY_ENTERED, f"{player_id} has entered already"
        )


def _register(batch: _Batch, command: Register) -> None:
    state = batch.state
    options = state.options
    _check_registration_open(batch)
    entrant_id = _check_id(command.entrant_id, "the entrant id")
    members = command.members
    if not isinstance(members, tuple) or len(members) != members_per_entrant(options):
        raise InvalidCommand(
            TournamentCode.WRONG_TEAM_SIZE,
            f"an entrant has {members_per_entrant(options)} player(s)",
        )
    for member in members:
        _check_id(member, "a player id")
    if len(set(members)) != len(members):
        raise InvalidCommand(TournamentCode.WRONG_TEAM_SIZE, "a player is named twice")
    rating = command.rating
    if not isinstance(rating, int) or isinstance(rating, bool) or abs(rating) > MAX_RATING:
        raise InvalidCommand(TournamentCode.INVALID_ID, f"the rating must be an int ≤ {MAX_RATING}")
    if not isinstance(command.name, str) or len(command.name) > MAX_NAME_LENGTH:
        raise InvalidCommand(TournamentCode.INVALID_ID, "the name is too long")
    if entrant_id in state.entrants:
        raise RuleViolation(TournamentCode.ALREADY_REGISTERED, f"{entrant_id} is registered")
    for member in members:
        _check_not_entered(state, member)
    if len(state.entrants) >= options.max_entrants:
        raise RuleViolation(TournamentCode.FULL, "the tournament is full")
    batch.emit(
        EntrantRegistered(
            Entrant(entrant_id=entrant_id, members=members, rating=rating, name=command.name)
        )
    )


def _ask_partner(batch: _Batch, command: AskPartner) -> None:
    """A registered pair is entered only when both of its players asked for each other."""
    state = batch.state
    _check_registration_open(batch)
    player = _check_id(command.player_id, "the player id")
    if state.options.entry is not Entry.PAIRS or members_per_entrant(state.options) != 2:
        raise InvalidCommand(
            TournamentCode.WRONG_TEAM_SIZE, "only a tournament of registered pairs of two "
            "takes a partner",
        )
    if not isinstance(command.name, str) or len(command.name) > MAX_NAME_LENGTH:
        raise InvalidCommand(TournamentCode.INVALID_ID, "the name is too long")
    _check_not_entered(state, player)
    standing = state.partner_asks.get(player)
    if not command.partner_id:
        if standing is not None:
            batch.emit(PartnerAsked(player_id=player, partner_id=""))
        return
    partner = _check_id(command.partner_id, "the partner id")
    if partner == player:
        raise InvalidCommand(TournamentCode.WRONG_TEAM_SIZE, "a player is named twice")
    _check_not_entered(state, partner)
    if len(state.entrants) >= state.options.max_entrants:
        raise RuleViolation(TournamentCode.FULL, "the tournament is full")
    answered = state.partner_asks.get(partner)
    if answered is not None and answered.partner_id == player:
        members = (partner, player)  # the player who asked first comes first
        _register(batch, Register(
            entrant_id="+".join(members), members=members, rating=command.rating,
            name=command.name or answered.name, at_ms=batch.at_ms,
        ))
        return
    ask = PartnerAsked(player_id=player, partner_id=partner, name=command.name)
    if standing != ask:  # asking again for the same changes nothing
        batch.emit(ask)


def _withdraw(batch: _Batch, command: Withdraw) -> None:
    state = batch.state
    _check_id(command.entrant_id, "the entrant id")
    if command.entrant_id not in state.entrants:
        raise RuleViolation(TournamentCode.UNKNOWN_ENTRANT, f"no entrant {command.entrant_id!r}")
    if command.entrant_id in state.withdrawn:
        raise RuleViolation(TournamentCode.ALREADY_WITHDRAWN, f"{command.entrant_id} withdrew")
    batch.emit(EntrantWithdrew(command.entrant_id))


def _set_absent(batch: _Batch, command: SetAbsent) -> None:
    state = batch.state
    _check_id(command.player_id, "the player id")
    if not any(command.player_id in e.members for e in state.entrants.values()):
        raise RuleViolation(TournamentCode.UNKNOWN_PLAYER, f"no player {command.player_id!r}")
    absent = bool(command.absent)
    if (command.player_id in state.absent) != absent:
        batch.emit(AbsenceChanged(player_id=command.player_id, absent=absent))


def _cancel(batch: _Batch) -> None:
    """Called off before the start: ended at once, with no standings, the seed revealed."""
    state = batch.state
    if state.phase is not Phase.REGISTRATION:
        raise RuleViolation(TournamentCode.ALREADY_STARTED, "the tournament has started")
    batch.emit(TournamentCancelled())
    batch.emit(TournamentEnded(standings=(), seed=state.seed))


# --- the start ------------------------------------------------------------------------------


def _start(batch: _Batch) -> None:
    state = batch.state
    if state.phase is not Phase.REGISTRATION:
        raise RuleViolation(TournamentCode.ALREADY_STARTED, "the tournament has started")
    options = state.options
    field = list(state.entrants)
    needed = 2
    if options.format is Format.KNOCKOUT:
        needed = 1 + _one_side(options)
    if len(field) < needed:
        raise RuleViolation(
            TournamentCode.TOO_FEW_ENTRANTS, f"this tournament needs {needed} entrants"
        )
    lot = DeterministicRandom(state.seed, "lot").shuffle(field)
    if options.seeding is Seeding.RANDOM:
        seed_order = DeterministicRandom(state.seed, "seeding").shuffle(field)
    else:
        lot_position = {entrant: index for index, entrant in enumerate(lot)}
        seed_order = sorted(
            field, key=lambda e: (-state.entrants[e].rating, lot_position[e])
        )
    rounds = 0
    if options.format is Format.SWISS:
        rounds = options.rounds or max(1, math.ceil(math.log2(len(field))))
    elif options.format is Format.ROUND_ROBIN:
        # The options cap a round robin's field (MAX_ROUND_ROBIN_ENTRANTS).
        rounds = len(round_robin_schedule(seed_order, entrants_per_table(options)))
    batch.emit(TournamentStarted(entrants=tuple(seed_order), lot=tuple(lot), rounds=rounds))
    _next_round_or_end(batch, 1)


# --- results ------------------------------------------------------------------------------


def _report(batch: _Batch, command: ReportResult) -> None:
    state = batch.state
    if state.phase is not Phase.RUNNING:
        raise RuleViolation(TournamentCode.NOT_STARTED, "the tournament has not started")
    if command.round != state.round:
        raise RuleViolation(
            TournamentCode.WRONG_ROUND, f"round {command.round} is not the current {state.round}"
        )
    if (
        not isinstance(command.table, int)
        or isinstance(command.table, bool)
        or not 0 <= command.table < len(state.tables)
    ):
        raise InvalidCommand(TournamentCode.UNKNOWN_TABLE, f"no table {command.table!r}")
    if command.table in state.results:
        raise RuleViolation(
            TournamentCode.RESULT_ALREADY_RECORDED, f"table {command.table} has its result"
        )
    sides = _check_sides(state, command.sides)
    timed_out = bool(command.timed_out)
    reported: tuple[int, ...] = ()
    if timed_out:
        if not state.deadline_ms or batch.at_ms < state.deadline_ms:
            raise RuleViolation(
                TournamentCode.NOT_TIMED_OUT, "the round has no time limit or time is not up"
            )
    else:
        reported = _check_winners(state, command.winners)
    table = state.tables[command.table]
    winners, source = rule_winners(state, table, sides, reported, timed_out)
    batch.emit(
        ResultRecorded(
            round=state.round,
            table=command.table,
            sides=sides,
            reported_winners=reported,
            timed_out=timed_out,
            winners=winners,
            source=source,
        )
    )
    if len(batch.state.results) == len(batch.state.tables):
        _end_round(batch)


def _check_sides(state: TournamentState, sides: object) -> tuple[SideResult, ...]:
    count = state.options.variant.side_count
    if not isinstance(sides, tuple) or len(sides) != count:
        raise InvalidCommand(TournamentCode.INVALID_RESULT, f"a result has {count} sides")
    checked: list[SideResult] = []
    for side in sides:
        if not isinstance(side, SideResult):
            raise InvalidCommand(TournamentCode.INVALID_RESULT, "a side must be a SideResult")
        for value in (side.points, side.tricks):
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidCommand(TournamentCode.INVALID_RESULT, "points and tricks are ints")
        if abs(side.points) > MAX_RESULT_VALUE or not 0 <= side.tricks <= MAX_RESULT_VALUE:
            raise InvalidCommand(TournamentCode.INVALID_RESULT, "points or tricks out of range")
        if not state.options.variant.has_tricks and side.tricks:
            raise InvalidCommand(TournamentCode.INVALID_RESULT, "this game counts no tricks")
        checked.append(side)
    return tuple(checked)


def _check_winners(state: TournamentState, winners: object) -> tuple[int, ...]:
    count = state.options.variant.side_count
    if (
        not isinstance(winners, tuple)
        or not winners
        or any(not isinstance(w, int) or isinstance(w, bool) or not 0 <= w < count for w in winners)
        or len(set(winners)) != len(winners)
        or len(winners) == count
    ):
        raise InvalidCommand(
            TournamentCode.INVALID_RESULT,
            f"winners must be distinct sides 0..{count - 1}, at least one, not all",
        )
    return tuple(sorted(winners))


def rule_winners(
    state: TournamentState,
    table: Table,
    sides: Sequence[SideResult],
    reported: tuple[int, ...],
    timed_out: bool,
) -> tuple[tuple[int, ...], ResultSource]:
    """The winning sides of a table and what settled them (docs/tournaments.md "Time limit").

    A finished match keeps the game's winners, except in a knockout, which needs one side of
    entrants to go on: a shared win, or a win by a side of bots only, is settled among the
    candidates (the sharing sides; every side with entrants) as a timed-out table is among
    all sides — best score, then most tricks, then a seeded draw.
    """
    knockout = state.options.format is Format.KNOCKOUT
    if not timed_out:
        if not knockout:
            return reported, ResultSource.GAME
        human = [side for side in reported if table.side_entrants(side)]
        if len(human) == 1:
            return (human[0],), ResultSource.GAME
        candidates = human or [
            side for side in range(len(sides)) if table.side_entrants(side)
        ]
    else:
        candidates = list(range(len(sides)))
        if knockout:
            candidates = [side for side in candidates if table.side_entrants(side)]
    variant = state.options.variant
    best_points = (min if variant.lower_points_win else max)(sides[s].points for s in candidates)
    candidates = [s for s in candidates if sides[s].points == best_points]
    if len(candidates) == 1:
        return (candidates[0],), ResultSource.POINTS
    if variant.has_tricks:
        best_tricks = max(sides[s].tricks for s in candidates)
        candidates = [s for s in candidates if sides[s].tricks == best_tricks]
        if len(candidates) == 1:
            return (candidates[0],), ResultSource.TRICKS
    draw = DeterministicRandom(state.seed, f"round/{state.round}/table/{table.table}/ruling")
    return (candidates[draw.randbelow(len(candidates))],), ResultSource.DRAW


# --- rounds -------------------------------------------------------------------------------


def _end_round(batch: _Batch) -> None:
    state = batch.state
    options = state.options
    knockout = options.format is Format.KNOCKOUT
    advancing: tuple[str, ...] = ()
    eliminated = state.eliminated
    if knockout:
        going_on = set(state.byes)
        for table in state.tables:
            for side in state.results[table.table].winners:
                going_on.update(table.side_entrants(side))
        advancing = tuple(
            e for e in state.alive if e in going_on and e not in state.withdrawn
        )
        eliminated = dict(eliminated)
        for entrant in state.alive:
            if entrant not in advancing:
                eliminated[entrant] = state.round
    records, _ = fold_round(state)
    standings = compute_standings(
        options, records, state.lot, eliminated=eliminated, withdrawn=state.withdrawn
    )
    batch.emit(RoundEnded(round=state.round, advancing=advancing, standings=standings))
    _next_round_or_end(batch, state.round + 1)


def _one_side(options: TournamentOptions) -> int:
    """Entrants on one side of a table: a knockout ends when no more are left."""
    return 1 if options.entry is Entry.PAIRS else options.variant.side_size


def _is_over(state: TournamentState, next_round: int) -> bool:
    options = state.options
    active = [e for e in state.alive if e not in state.withdrawn]
    if options.format is Format.KNOCKOUT:
        return len(active) <= _one_side(options)
    if len(active) < 2:
        return True
    if options.format is Format.ROUND_ROBIN:
        return next_round > len(state.schedule)
    return next_round > state.rounds_planned


def _next_round_or_end(batch: _Batch, next_round: int) -> None:
    state = batch.state
    if _is_over(state, next_round):
        standings = compute_standings(
            state.options,
            state.records,
            state.lot,
            eliminated=state.eliminated,
            withdrawn=state.withdrawn,
        )
        batch.emit(TournamentEnded(standings=standings, seed=state.seed))
        return
    groups, byes = plan_groups(state, next_round)
    tables = tuple(
        seat_table(state, next_round, number, group) for number, group in enumerate(groups)
    )
    seconds = state.options.round_seconds
    batch.emit(
        RoundStarted(
            round=next_round,
            tables=tables,
            byes=byes,
            deadline_ms=batch.at_ms + seconds * 1000 if seconds else 0,
        )
    )


def plan_groups(
    state: TournamentState, round_number: int
) -> tuple[list[tuple[str | None, ...]], tuple[str, ...]]:
    """Who sits together in ``round_number`` (``None``: a bot fills the seat's place) and who
    has a bye (docs/tournaments.md "Pairing" and "Byes and bots")."""
    options = state.options
    size = entrants_per_table(options)
    active = [e for e in state.alive if e not in state.withdrawn]
    if options.format is Format.ROUND_ROBIN:
        return _round_robin_groups(state, round_number, size)
    if options.format is Format.KNOCKOUT:
        order = active  # alive is kept in seed order
    elif round_number == 1:
        playing = set(active)
        order = [e for e in state.seed_order if e in playing]
    else:
        shuffled = DeterministicRandom(state.seed, f"round/{round_number}/order").shuffle(active)
        position = {entrant: index for index, entrant in enumerate(shuffled)}
        records = state.records
        order = sorted(active, key=lambda e: (-records[e].match_points, position[e]))
    leftover = len(order) % size
    byes: list[str] = []
    partial: list[str] = []
    if leftover:
        bots_fill = options.fill_with_bots or len(order) < size
        if options.format is Format.KNOCKOUT:
            # The best seeds get the bye, or the table completed with bots.
            if bots_fill:
                partial = order[:leftover]
            else:
                index = {entrant: i for i, entrant in enumerate(order)}
                byes = sorted(order, key=lambda e: (state.records[e].byes, index[e]))[:leftover]
        else:
            # The lowest-ranked get the bye (never twice while someone has had fewer), or
            # sit at the last table with bots.
            if bots_fill:
                partial = order[len(order) - leftover :]
            else:
                index = {entrant: i for i, entrant in enumerate(order)}
                byes = sorted(order, key=lambda e: (state.records[e].byes, -index[e]))[
                    :leftover
                ]
        taken = set(byes) | set(partial)
        order = [e for e in order if e not in taken]
    groups: list[tuple[str | None, ...]]
    if options.format is Format.KNOCKOUT:
        groups = [*fold(order, size)]
        if partial:
            groups.insert(0, tuple(partial))
    elif round_number == 1:
        groups = [*slide(order, size)]
        if partial:
            groups.append(tuple(partial))
    else:
        sizes = [size] * (len(order) // size)
        if partial:
            order = order + partial
            sizes.append(len(partial))
        groups = [*group_swiss(order, sizes, state.met)]
    bye_set = set(byes)
    return groups, tuple(e for e in state.seed_order if e in bye_set)


def _round_robin_groups(
    state: TournamentState, round_number: int, size: int
) -> tuple[list[tuple[str | None, ...]], tuple[str, ...]]:
    scheduled = state.schedule[round_number - 1]
    withdrawn = state.withdrawn
    groups: list[tuple[str | None, ...]] = []
    seated: set[str] = set()
    for members in scheduled:
        seated.update(members)
        present = [e for e in members if e not in withdrawn]
        if len(present) >= 2 or (present and state.options.fill_with_bots):
            groups.append(tuple(e if e not in withdrawn else None for e in members))
        elif present:
            seated.discard(present[0])
    out = [e for e in state.seed_order if e not in seated and e not in withdrawn]
    if out and (state.options.fill_with_bots or not groups):
        for start in range(0, len(out), size):
            groups.append(tuple(out[start : start + size]))
        out = []
    return groups, tuple(out)


def seat_table(
    state: TournamentState, round_number: int, number: int, group: Sequence[str | None]
) -> Table:
    """Seat ``group`` at table ``number``: a seeded shuffle decides the sides (and, for
    individuals, who partners whom) and who sits in which of a side's seats. Missing places
    are bots; a seat whose player is absent or withdrew gets a stand-in."""
    options = state.options
    variant = options.variant
    size = entrants_per_table(options)
    padded: list[str | None] = [*group, *([None] * (size - len(group)))]
    rng = DeterministicRandom(state.seed, f"round/{round_number}/table/{number}/seating")
    shuffled = rng.shuffle(padded)
    seats: list[Seat | None] = [None] * variant.seats
    if options.entry is Entry.PAIRS:
        for side, entrant_id in enumerate(shuffled):
            side_seats = variant.sides[side]
            if entrant_id is None:
                players: list[str] = [""] * len(side_seats)
            else:
                players = rng.shuffle(list(state.entrants[entrant_id].members))
            for seat, player in zip(side_seats, players, strict=True):
                seats[seat] = _seat(state, player, entrant_id or "", side)
    else:
        side_of = {seat: side for side, members in enumerate(variant.sides) for seat in members}
        for seat, entrant_id in enumerate(shuffled):
            player = state.entrants[entrant_id].members[0] if entrant_id else ""
            seats[seat] = _seat(state, player, entrant_id or "", side_of[seat])
    return Table(table=number, seats=tuple(seat for seat in seats if seat is not None))


def _seat(state: TournamentState, player: str, entrant_id: str, side: int) -> Seat:
    stand_in = bool(entrant_id) and (player in state.absent or entrant_id in state.withdrawn)
    return Seat(player_id=player, entrant_id=entrant_id, side=side, stand_in=stand_in)
