"""The public model of a tournament: what it is made of, what can be asked of it, what
happens to it.

A tournament is an event log decided by a pure engine, like a match:

* :func:`engine.tournament.create` makes the first event (:class:`TournamentCreated`) from
  :class:`TournamentOptions`, an id and a secret seed (whose hash the event commits to);
* ``decide(state, command) -> list[Event]`` checks a :data:`Command` against the
  :class:`TournamentState` and returns the events it causes (or raises a
  :class:`~engine.core.errors.RuleViolation` with a :class:`TournamentCode`);
* ``evolve(state, event) -> state`` applies one :class:`Event`; ``replay(events)`` folds a log;
* ``verify(events)`` re-derives every random choice and every standing from the revealed
  seed and checks the commitment (:mod:`engine.tournament.audit`).

Every type here is a value (a frozen dataclass of tuples and strings; the state's dicts are
never changed once built), so states and events can be shared and compared. Ids are opaque
non-empty strings chosen by the caller (the service): an *entrant* is what the standings
rank — a registered pair (``Entry.PAIRS``) or one player (``Entry.INDIVIDUALS``); a
*player* is a person (an account id) who sits in a seat. A seat whose ``player_id`` is
empty is a bot filling an empty seat.

The engine knows no game: a :class:`VariantSpec` tells it the table size, which seats form
a side (partners) and whether points count up or down; the service turns a table's game
log into a :class:`ReportResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Final

MAX_ENTRANTS: Final = 4096
"""The most entrants one tournament takes."""
MAX_ID_LENGTH: Final = 128
"""The longest entrant or player id (characters)."""
MAX_ROUND_ROBIN_ENTRANTS: Final = 16
"""Round robin is for small fields: at most this many entrants."""
MAX_ROUNDS: Final = 64
"""The most rounds a Swiss tournament may be asked to play."""
DEFAULT_RATING: Final = 1500
"""The rating of an entrant registered without one."""


# --- what is played -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VariantSpec:
    """The shape of the game every table plays, as far as the tournament needs it.

    ``sides`` lists, per side (team), the seats its members occupy; every side has the same
    number of seats and together they cover ``0..seats-1`` once. Hokm with four players is
    ``((0, 2), (1, 3))``; Hokm with three players is ``((0,), (1,), (2,))``.
    """

    game: str
    """The game's registry name (``"hokm"``, ``"hand"``); recorded, never branched on by the
    tournament's decisions (only :func:`engine.tournament.variants.table_rules` reads it, to
    find the game's rules)."""
    seats: int
    """Players at a table (2..8; the served games seat 2..4)."""
    sides: tuple[tuple[int, ...], ...]
    """Seats of each side, side by side."""
    lower_points_win: bool = False
    """Points are penalties (Hand): fewer is better in standings and time-limit rulings."""
    has_tricks: bool = True
    """The game counts tricks (Hokm): tricks are a tie-break and a time-limit criterion."""

    @property
    def side_count(self) -> int:
        """Sides at a table."""
        return len(self.sides)

    @property
    def side_size(self) -> int:
        """Seats per side (2 for partnerships, else 1)."""
        return len(self.sides[0])


# --- options --------------------------------------------------------------------------------


class Format(StrEnum):
    """How rounds are paired and when the tournament ends."""

    SWISS = "swiss"
    """A fixed number of rounds; each round seats entrants of equal standing together."""
    KNOCKOUT = "knockout"
    """Each table's winning side goes on; the others are out. Ends when one side is left."""
    ROUND_ROBIN = "round_robin"
    """Every entrant meets every other (small fields); the schedule is drawn at the start."""


class Entry(StrEnum):
    """What registers and what the standings rank."""

    PAIRS = "pairs"
    """Fixed teams of ``VariantSpec.side_size`` players (a game whose sides are one seat
    has teams of one, the same as individuals)."""
    INDIVIDUALS = "individuals"
    """Single players; with partnerships, partners are drawn at random at every table."""


class Seeding(StrEnum):
    """How round 1 is seated."""

    RATING = "rating"
    """By the rating given at registration (equal ratings in a seeded random order)."""
    RANDOM = "random"
    """In a seeded random order."""


class TieBreak(StrEnum):
    """Criteria after match points, applied in the order of ``TournamentOptions.tie_breaks``.

    Every criterion is "more is better" except ``POINTS`` in a variant whose points are
    penalties (``VariantSpec.lower_points_win``). A lot drawn at the start always comes last.
    """

    TRICKS = "tricks"
    """Tricks won over all matches."""
    POINTS = "points"
    """Game points scored over all matches (penalties in a lower-wins game)."""
    WINS = "wins"
    """Matches won outright."""
    OPPONENTS = "opponents"
    """Sum of the match points of every entrant met (Buchholz); bots count 0."""


class ResultSource(StrEnum):
    """How a table's winners were settled (recorded in :class:`ResultRecorded`).

    A timed-out table is settled among all its sides; a knockout table whose win the game
    shared, or which a side of bots only won, among the sharing sides or the sides of
    entrants — in both cases by score, then tricks, then a seeded draw.
    """

    GAME = "game"
    """The match ended; the game named the winners."""
    POINTS = "points"
    """Settled: the side with the best score (most points; fewest in a penalty game)."""
    TRICKS = "tricks"
    """Settled, scores level: the side with the most tricks."""
    DRAW = "draw"
    """Settled, scores and tricks level: a seeded draw among the level sides."""


@dataclass(frozen=True, slots=True)
class TournamentOptions:
    """Everything that shapes a tournament; fixed at creation, recorded in the first event.

    Zero means "the default" where said; :func:`engine.tournament.resolve_options` checks the
    options and resolves every default, so a recorded log never depends on today's defaults.
    """

    variant: VariantSpec
    format: Format = Format.SWISS
    entry: Entry = Entry.PAIRS
    rounds: int = 0
    """Swiss: rounds to play (0: enough to separate the field, ``ceil(log2(entrants))``,
    at least 1). Ignored by knockout and round robin, whose length follows from the field."""
    seeding: Seeding = Seeding.RATING
    fill_with_bots: bool = False
    """Seats left over when the field is not a multiple of the table are bots (True) or the
    entrants left over get a bye (False)."""
    win_points: int = 2
    """Match points for winning a table alone."""
    shared_win_points: int = 1
    """Match points for each side sharing a win (a tie the game shares, e.g. Hand)."""
    loss_points: int = 0
    bye_points: int = -1
    """Match points for a bye (-1: ``win_points``). A bye scores no game points or tricks."""
    tie_breaks: tuple[TieBreak, ...] = ()
    """After match points (empty: the variant's default — ``TRICKS, POINTS, OPPONENTS`` when
    the game counts tricks, else ``POINTS, WINS, OPPONENTS``). The lot always comes last."""
    round_seconds: int = 0
    """Time limit of a round in seconds (0: none). A table not over by then is settled by
    score, then tricks, then a seeded draw (:class:`ResultSource`)."""
    registration_closes_at_ms: int = 0
    """Registrations at or after this time are refused (0: open until the start)."""
    max_entrants: int = 0
    """0: :data:`MAX_ENTRANTS`."""
    table_target_score: int = 0
    """The match length the service gives each table (0: the game's default); recorded only."""
    table_turn_seconds: int = 0
    """The turn time the service gives each table (0: the game's default); recorded only."""


# --- the pieces of the state and the events -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entrant:
    """A registered pair or player."""

    entrant_id: str
    members: tuple[str, ...]
    """Player ids: ``VariantSpec.side_size`` of them for ``Entry.PAIRS``, else one."""
    rating: int = DEFAULT_RATING
    name: str = ""
    """A display name (a pair's name); may be empty."""


@dataclass(frozen=True, slots=True)
class Seat:
    """One seat of a table in a round."""

    player_id: str
    """Empty for a bot filling an empty seat."""
    entrant_id: str
    """Empty for a bot."""
    side: int
    """Index into ``VariantSpec.sides``."""
    stand_in: bool = False
    """The player is absent (or withdrew): a bot plays the seat for them, the result counts."""

    @property
    def is_bot(self) -> bool:
        """A bot fills this seat (no entrant)."""
        return not self.entrant_id


@dataclass(frozen=True, slots=True)
class Table:
    """A table of a round: seat ``i`` of the game is ``seats[i]``."""

    table: int
    """0-based number within the round."""
    seats: tuple[Seat, ...]

    def side_entrants(self, side: int) -> tuple[str, ...]:
        """The entrants on ``side`` (distinct, in seat order; empty for an all-bot side)."""
        found: list[str] = []
        for seat in self.seats:
            if seat.side == side and seat.entrant_id and seat.entrant_id not in found:
                found.append(seat.entrant_id)
        return tuple(found)

    @property
    def entrants(self) -> tuple[str, ...]:
        """Every entrant at the table, in seat order, once each."""
        found: list[str] = []
        for seat in self.seats:
            if seat.entrant_id and seat.entrant_id not in found:
                found.append(seat.entrant_id)
        return tuple(found)


@dataclass(frozen=True, slots=True)
class SideResult:
    """What one side did at a table, as the game's events tell it."""

    points: int
    """The side's match score (penalty total in a lower-wins game)."""
    tricks: int = 0
    """Tricks the side won over the match (0 for a game without tricks)."""


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the standings."""

    rank: int
    """1-based; every line has its own rank (ties are broken down to the lot)."""
    entrant_id: str
    match_points: int
    points: int
    tricks: int
    wins: int
    """Tables won outright (shared wins not counted)."""
    played: int
    """Tables played (byes not counted)."""
    byes: int
    opponents: int
    """Sum of the match points of the entrants met (Buchholz)."""
    eliminated_in_round: int = 0
    """Knockout: the round the entrant went out in (0: still in, or not a knockout)."""
    withdrawn: bool = False


# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TournamentCreated:
    """The first event: the options and the commitment to the seed."""

    tournament_id: str
    options: TournamentOptions
    commitment: bytes
    """``sha256(seed)`` (:func:`engine.core.fairness.commit`)."""
    seed: bytes
    """The secret seed; present in the stored log, blanked by
    :func:`engine.tournament.redact` for anyone but the server until the end."""


@dataclass(frozen=True, slots=True)
class EntrantRegistered:
    """An entrant joined (before the start)."""

    entrant: Entrant


@dataclass(frozen=True, slots=True)
class PartnerAsked:
    """A player asked to enter a registered pair with ``partner_id`` (empty: took the ask
    back). The pair is entered (:class:`EntrantRegistered`) when the partner asks for this
    player in turn, so nobody is entered in a pair they did not ask for."""

    player_id: str
    partner_id: str
    name: str = ""
    """The pair's display name the player proposed (may be empty)."""


@dataclass(frozen=True, slots=True)
class EntrantWithdrew:
    """The entrant leaves: it is paired no more; a running table keeps it with stand-ins."""

    entrant_id: str


@dataclass(frozen=True, slots=True)
class AbsenceChanged:
    """A player is away (a bot stands in for them from the next table) or back."""

    player_id: str
    absent: bool


@dataclass(frozen=True, slots=True)
class FeaturedChanged:
    """An operator featured the tournament (listings show it first while it is open) or
    stopped featuring it. No rule reads it; it is in the log so that every replica lists
    the tournament alike."""

    featured: bool


@dataclass(frozen=True, slots=True)
class TournamentCancelled:
    """The tournament was called off before its start; the :class:`TournamentEnded` that
    follows in the same batch ends it with no standings and reveals the seed."""


@dataclass(frozen=True, slots=True)
class TournamentStarted:
    """Registration is closed; the field and its seeded orders are fixed."""

    entrants: tuple[str, ...]
    """The field in seed order (rating, then the lot)."""
    lot: tuple[str, ...]
    """The field in the order of the lot drawn from the seed: the last tie-break."""
    rounds: int
    """Rounds planned (Swiss, round robin); a knockout's count follows from the field."""


@dataclass(frozen=True, slots=True)
class RoundStarted:
    """A round's tables, seating and byes."""

    round: int
    """1-based."""
    tables: tuple[Table, ...]
    byes: tuple[str, ...]
    """Entrants who sit out this round (scored as :attr:`TournamentOptions.bye_points`)."""
    deadline_ms: int
    """When the round's time runs out (0: no time limit)."""


@dataclass(frozen=True, slots=True)
class ResultRecorded:
    """A table's result, as reported and as ruled."""

    round: int
    table: int
    sides: tuple[SideResult, ...]
    """One per side of the table, in side order."""
    reported_winners: tuple[int, ...]
    """The winning sides the game named (empty when the table timed out)."""
    timed_out: bool
    winners: tuple[int, ...]
    """The sides that won, after the time-limit rule (several: a shared win)."""
    source: ResultSource


@dataclass(frozen=True, slots=True)
class RoundEnded:
    """Every table of the round has a result."""

    round: int
    advancing: tuple[str, ...]
    """Knockout: the entrants still in after this round (empty otherwise)."""
    standings: tuple[Standing, ...]


@dataclass(frozen=True, slots=True)
class TournamentEnded:
    """The last event: final standings and the revealed seed."""

    standings: tuple[Standing, ...]
    seed: bytes
    """The seed the first event committed to."""


EventBody = (
    TournamentCreated
    | EntrantRegistered
    | PartnerAsked
    | EntrantWithdrew
    | AbsenceChanged
    | FeaturedChanged
    | TournamentCancelled
    | TournamentStarted
    | RoundStarted
    | ResultRecorded
    | RoundEnded
    | TournamentEnded
)
"""Every fact a tournament log holds."""


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a tournament log."""

    seq: int
    """1-based position in the log; each event's is the previous one's plus one."""
    at_ms: int
    """When the command that caused it was decided (Unix ms, the caller's clock)."""
    body: EventBody


# --- commands -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Register:
    """Enter a pair or a player (``members`` as for :class:`Entrant`)."""

    entrant_id: str
    members: tuple[str, ...]
    rating: int = DEFAULT_RATING
    name: str = ""
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class AskPartner:
    """A player's half of entering a registered pair of two: the pair is entered once
    ``partner_id`` has asked for ``player_id`` too, in either order. Empty ``partner_id``
    takes the player's ask back; a new ask replaces the old one."""

    player_id: str
    partner_id: str
    rating: int = DEFAULT_RATING
    name: str = ""
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class Withdraw:
    """Take an entrant out: removed before the start, paired no more after it."""

    entrant_id: str
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class SetAbsent:
    """Mark a player away (a bot stands in at their next tables) or back."""

    player_id: str
    absent: bool
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class Feature:
    """Feature the tournament in listings (``featured``) or stop featuring it."""

    featured: bool
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class Cancel:
    """Call the tournament off before its start: it ends at once, with no standings."""

    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class Start:
    """Close registration, fix the field and seat round 1."""

    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class ReportResult:
    """A table's match is over, or the round's time ran out on it.

    ``sides`` are the side totals read from the game's events; ``winners`` the sides the
    game named (ignored when ``timed_out``: the engine rules, see :class:`ResultSource`).
    The last result of a round also ends the round and seats the next one (or ends the
    tournament), in the same list of events.
    """

    round: int
    table: int
    sides: tuple[SideResult, ...]
    winners: tuple[int, ...] = ()
    timed_out: bool = False
    at_ms: int = 0


Command = Register | AskPartner | Withdraw | SetAbsent | Feature | Cancel | Start | ReportResult
"""Everything that can be asked of a tournament after its creation."""


# --- the state ----------------------------------------------------------------------------


class Phase(IntEnum):
    """Where the tournament is."""

    REGISTRATION = 1
    """Open for registration; :class:`Start` begins it."""
    RUNNING = 2
    """A round is being played."""
    FINISHED = 3


@dataclass(frozen=True, slots=True)
class Record:
    """An entrant's running totals (the raw material of the standings)."""

    match_points: int = 0
    points: int = 0
    tricks: int = 0
    wins: int = 0
    played: int = 0
    byes: int = 0
    opponents: tuple[str, ...] = ()
    """Entrants met on other sides, once per meeting (repeats kept for Buchholz)."""


@dataclass(frozen=True, slots=True)
class TournamentState:
    """Everything the rules need, rebuilt from the log by ``replay``.

    Mappings are plain dicts never mutated after construction (each event builds new ones).
    """

    seq: int
    tournament_id: str
    options: TournamentOptions
    """Resolved (every default filled in)."""
    commitment: bytes
    seed: bytes
    """Empty when built from a redacted log before the end."""
    phase: Phase
    entrants: dict[str, Entrant]
    """Every registered entrant, by id, in registration order."""
    withdrawn: frozenset[str]
    absent: frozenset[str]
    """Player ids currently away."""
    partner_asks: dict[str, PartnerAsked] = field(default_factory=dict)
    """Registered pairs: each player's standing ask for a partner who has not asked back."""
    seed_order: tuple[str, ...] = ()
    """Set at the start: the field in seed order."""
    lot: tuple[str, ...] = ()
    """Set at the start: the lot order (last tie-break)."""
    rounds_planned: int = 0
    round: int = 0
    """The current (or last) round, 0 before the first."""
    tables: tuple[Table, ...] = ()
    """The current round's tables."""
    byes: tuple[str, ...] = ()
    """The current round's byes."""
    deadline_ms: int = 0
    results: dict[int, ResultRecorded] = field(default_factory=dict)
    """The current round's results by table number."""
    records: dict[str, Record] = field(default_factory=dict)
    """Totals of every entrant of the field as of the last round ended, plus the current
    round's byes (a round's results are added when it ends; they are in ``results`` until
    then)."""
    alive: tuple[str, ...] = ()
    """Knockout: entrants still in (seed order). Other formats: the field less withdrawals."""
    eliminated: dict[str, int] = field(default_factory=dict)
    """Knockout: the round each eliminated entrant went out in."""
    met: dict[str, frozenset[str]] = field(default_factory=dict)
    """Entrants each entrant has shared a table with (as of the last round ended)."""
    schedule: tuple[tuple[tuple[str, ...], ...], ...] = ()
    """Round robin: the groups of every round, drawn at the start."""
    standings: tuple[Standing, ...] = ()
    """As of the last round ended (final once ``phase`` is FINISHED)."""
    featured: bool = False
    """An operator features it (:class:`FeaturedChanged`)."""
    cancelled: bool = False
    """Called off before its start (:class:`TournamentCancelled`); ``phase`` is FINISHED."""

    @property
    def is_over(self) -> bool:
        """The tournament has ended."""
        return self.phase is Phase.FINISHED

    def player_table(self, player_id: str) -> Table | None:
        """The current round's table where ``player_id`` sits (None: no table or a bye)."""
        for table in self.tables:
            for seat in table.seats:
                if seat.player_id == player_id:
                    return table
        return None
