"""The stats service's tables in SQL (SQLModel): progress per game, figures per player.

SQLite (a file in embedded mode) or PostgreSQL, at the URL the composition root gives
(``Settings.store_url()``). The tables are the stats service's own (``stats_*``, in their
own SQLModel registry, apart from the event store's and the lobby's) and are created when
missing, as the lobby does.

Exactly once: :meth:`StatsStore.apply` writes everything a batch of events changed (the
figures, the ratings, the history rows) and every game's last applied ``seq`` in one
transaction, so a batch counts entirely or not at all, and a redelivered event (its seq at
or below the stored one) is recognized as seen.

Tables::

    stats_progress   game_id → game type, last applied seq, first event, seat holders, over
    stats_players    (subject, game type, variant) → matches, moves, rating
    stats_counters   (subject, game type, variant, counter) → value (the game's counters)
    stats_periods    (subject, game type, variant, period) → matches, wins, rating change
    stats_matches    (game_id, seat) → one finished match of one seat (the history)
    stats_meta       name → value (how many matches were rated: the rating order)

A *subject* is whom figures belong to: a player id, or ``bot:<level>`` for a bot seated
from the start (:func:`services.stats.projector.subject_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    and_,
    bindparam,
    or_,
    select,
    tuple_,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from services.platform.sql_engine import SqlTables, open_tables

SUBJECT_CHARS = 160
"""Longest subject (a player id, or ``bot:`` and a level)."""


class StatsModel(SQLModel, registry=registry()):
    """Base of the stats service's tables: their own metadata."""


class ProgressRow(StatsModel, table=True):
    """How far the projection of one game got (written with every change it caused)."""

    __tablename__ = "stats_progress"

    game_id: str = Field(sa_column=Column(String(64), primary_key=True))
    game_type: int = Field(nullable=False)
    applied_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    first_event: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    holders: str = Field(sa_column=Column(String(1024), nullable=False, default=""))
    """The bot level holding each seat ("" for the seat's player), comma-separated."""
    over: bool = Field(sa_column=Column(Boolean, nullable=False, default=False))


class PlayerRow(StatsModel, table=True):
    """A subject's matches, moves and rating in one game and variant."""

    __tablename__ = "stats_players"
    __table_args__ = (Index("ix_stats_players_board", "game_type", "variant", "ordinal"),)

    subject: str = Field(sa_column=Column(String(SUBJECT_CHARS), primary_key=True))
    game_type: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    variant: str = Field(sa_column=Column(String(32), primary_key=True))
    is_bot: bool = Field(sa_column=Column(Boolean, nullable=False, default=False))
    played: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    won: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    lost: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    abandoned: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    own_moves: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    bot_moves: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    rated: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    mu: float = Field(sa_column=Column(Float, nullable=False, default=0.0))
    sigma: float = Field(sa_column=Column(Float, nullable=False, default=0.0))
    ordinal: float = Field(sa_column=Column(Float, nullable=False, default=0.0))


class CounterRow(StatsModel, table=True):
    """One of a game's counters (``engine/<game>/stats.py``) for a subject."""

    __tablename__ = "stats_counters"

    subject: str = Field(sa_column=Column(String(SUBJECT_CHARS), primary_key=True))
    game_type: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    variant: str = Field(sa_column=Column(String(32), primary_key=True))
    counter: str = Field(sa_column=Column(String(64), primary_key=True))
    value: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))


class PeriodRow(StatsModel, table=True):
    """A subject's matches in one ISO week (``W2026-49``) or month (``M2026-12``)."""

    __tablename__ = "stats_periods"
    __table_args__ = (Index("ix_stats_periods_board", "game_type", "variant", "period"),)

    subject: str = Field(sa_column=Column(String(SUBJECT_CHARS), primary_key=True))
    game_type: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    variant: str = Field(sa_column=Column(String(32), primary_key=True))
    period: str = Field(sa_column=Column(String(16), primary_key=True))
    played: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    won: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    rating_change: float = Field(sa_column=Column(Float, nullable=False, default=0.0))


class MatchRow(StatsModel, table=True):
    """One seat's finished match: a line of its subject's history."""

    __tablename__ = "stats_matches"
    __table_args__ = (Index("ix_stats_matches_history", "subject", "ended_at_ms", "game_id"),)

    game_id: str = Field(sa_column=Column(String(64), primary_key=True))
    seat: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    subject: str = Field(sa_column=Column(String(SUBJECT_CHARS), nullable=False))
    game_type: int = Field(nullable=False)
    variant: str = Field(sa_column=Column(String(32), nullable=False))
    ended_at_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    won: bool = Field(nullable=False)
    abandoned: bool = Field(nullable=False)
    rating_order: int = Field(sa_column=Column(BigInteger, nullable=False))
    mu_before: float = Field(nullable=False)
    sigma_before: float = Field(nullable=False)
    mu_after: float = Field(nullable=False)
    sigma_after: float = Field(nullable=False)


class MetaRow(StatsModel, table=True):
    """A named number of the projection (``rated_matches``)."""

    __tablename__ = "stats_meta"

    name: str = Field(sa_column=Column(String(64), primary_key=True))
    value: int = Field(sa_column=Column(BigInteger, nullable=False))


class DeletedPlayerRow(StatsModel, table=True):
    """A player whose account was deleted: their figures stay (the logs they come from are
    signed), shown as a deleted player's."""

    __tablename__ = "stats_deleted_players"

    player_id: str = Field(sa_column=Column(String(SUBJECT_CHARS), primary_key=True))
    deleted_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


PROGRESS: Table = ProgressRow.__table__  # type: ignore[attr-defined]
PLAYERS: Table = PlayerRow.__table__  # type: ignore[attr-defined]
COUNTERS: Table = CounterRow.__table__  # type: ignore[attr-defined]
PERIODS: Table = PeriodRow.__table__  # type: ignore[attr-defined]
MATCHES: Table = MatchRow.__table__  # type: ignore[attr-defined]
META: Table = MetaRow.__table__  # type: ignore[attr-defined]
DELETED_PLAYERS: Table = DeletedPlayerRow.__table__  # type: ignore[attr-defined]
RATED_MATCHES = "rated_matches"
Result = TypeVar("Result")

PlayerKey = tuple[str, int, str]
"""(subject, game type, variant)."""


@dataclass
class Progress:
    """A game's stored progress."""

    game_id: str
    game_type: int
    applied_seq: int
    first_event: bytes
    """The game's first event (empty when read without it: :meth:`Reads.first_event`)."""
    holders: list[str]
    over: bool


@dataclass(frozen=True)
class Rating:
    """A subject's rating in one game and variant (``rated`` matches so far)."""

    mu: float
    sigma: float
    rated: int


@dataclass
class PlayerDelta:
    """What a batch adds to one subject's row (``rating`` replaces the stored one)."""

    is_bot: bool = False
    played: int = 0
    won: int = 0
    lost: int = 0
    abandoned: int = 0
    own_moves: int = 0
    bot_moves: int = 0
    rating: Rating | None = None
    ordinal: float = 0.0


@dataclass
class PeriodDelta:
    """What a batch adds to one subject's period row."""

    played: int = 0
    won: int = 0
    rating_change: float = 0.0


@dataclass
class Changes:
    """Everything one batch changes, written in one transaction by :meth:`StatsStore.apply`."""

    progress: dict[str, Progress] = field(default_factory=dict)
    players: dict[PlayerKey, PlayerDelta] = field(default_factory=dict)
    counters: dict[tuple[str, int, str, str], int] = field(default_factory=dict)
    periods: dict[tuple[str, int, str, str], PeriodDelta] = field(default_factory=dict)
    matches: list[dict[str, Any]] = field(default_factory=list)
    rated_matches: int | None = None
    """The new count of rated matches, when the batch rated any."""

    def player(self, key: PlayerKey) -> PlayerDelta:
        """The delta of ``key``, created empty when missing."""
        delta = self.players.get(key)
        if delta is None:
            delta = self.players[key] = PlayerDelta()
        return delta


_PROGRESS_OF: Final = select(
    PROGRESS.c.game_id, PROGRESS.c.game_type, PROGRESS.c.applied_seq, PROGRESS.c.holders,
    PROGRESS.c.over,
).where(PROGRESS.c.game_id.in_(bindparam("ids", expanding=True)))
"""Progress rows without the first event (the projection keeps it read while a game runs)."""


class Reads:
    """What the projection reads inside the transaction that writes its changes."""

    def __init__(self, connection: Connection) -> None:
        self._db = connection

    def progress(self, game_ids: Sequence[str]) -> dict[str, Progress]:
        """The stored progress of those games (absent: nothing applied yet)."""
        found: dict[str, Progress] = {}
        for start in range(0, len(game_ids), 500):
            rows = self._db.execute(_PROGRESS_OF, {"ids": list(game_ids[start:start + 500])})
            for row in rows:
                found[row.game_id] = Progress(
                    row.game_id, row.game_type, row.applied_seq, b"",
                    row.holders.split(",") if row.holders else [], row.over)
        return found

    def first_event(self, game_id: str) -> bytes:
        """The stored first event of a game (empty for a game never seen)."""
        value = self._db.execute(select(PROGRESS.c.first_event)
                                 .where(PROGRESS.c.game_id == game_id)).scalar()
        return bytes(value or b"")

    def ratings(self, keys: Sequence[PlayerKey]) -> dict[PlayerKey, Rating]:
        """The stored ratings of those subjects (absent: never rated)."""
        found: dict[PlayerKey, Rating] = {}
        for start in range(0, len(keys), 300):
            chunk = keys[start:start + 300]
            rows = self._db.execute(
                select(PLAYERS.c.subject, PLAYERS.c.game_type, PLAYERS.c.variant,
                       PLAYERS.c.mu, PLAYERS.c.sigma, PLAYERS.c.rated)
                .where(tuple_(PLAYERS.c.subject, PLAYERS.c.game_type, PLAYERS.c.variant)
                       .in_(chunk)))
            for row in rows:
                if row.rated:
                    found[(row.subject, row.game_type, row.variant)] = Rating(
                        row.mu, row.sigma, row.rated)
        return found

    def rated_matches(self) -> int:
        """How many matches were rated so far (the next one gets this number plus one)."""
        value = self._db.execute(select(META.c.value).where(META.c.name == RATED_MATCHES)
                                 ).scalar()
        return int(value or 0)


class StatsStore(SqlTables):
    """The stats tables (synchronous, thread-safe; async code uses ``asyncio.to_thread``)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._insert = (postgresql.insert if engine.dialect.name == "postgresql"
                        else sqlite.insert)
        self._statements = self._upserts()

    @classmethod
    def open(cls, url: str | None) -> StatsStore:
        """Open the store at ``url`` (None: private in-memory SQLite), creating its tables.

        :raises ValueError: if ``url`` is neither SQLite nor PostgreSQL.
        """
        return cls(open_tables(url, StatsModel.metadata, owner="stats",
                               sqlite_synchronous="NORMAL"))

    def apply(self, project: Callable[[Reads], tuple[Changes, Result]]) -> Result:
        """Run ``project(reads) -> (changes, result)`` inside one transaction, write its
        :class:`Changes` there and return ``result``: the figures and every game's last
        applied seq commit together or not at all."""
        with self._transaction() as db:
            changes, result = project(Reads(db))
            self._write(db, changes)
        return result

    def _upserts(self) -> dict[str, Any]:
        """The upserts of :meth:`_write`, built once (SQLAlchemy then reuses their compiled
        form; building them per batch cost more than the rows they write)."""
        upsert = self._insert

        def adding(table: Table, keys: Sequence[str], added: Sequence[str],
                   replaced: Sequence[str] = ()) -> Any:
            statement = upsert(table)
            return statement.on_conflict_do_update(
                index_elements=[table.c[key] for key in keys],
                set_={**{name: table.c[name] + statement.excluded[name] for name in added},
                      **{name: statement.excluded[name] for name in replaced}})

        player_keys = ("subject", "game_type", "variant")
        counted = ("played", "won", "lost", "abandoned", "own_moves", "bot_moves")
        return {
            "progress": adding(PROGRESS, ("game_id",), (),
                               ("applied_seq", "holders", "over")),
            "players": adding(PLAYERS, player_keys, counted),
            "rated_players": adding(PLAYERS, player_keys, counted,
                                    ("rated", "mu", "sigma", "ordinal")),
            "counters": adding(COUNTERS, (*player_keys, "counter"), ("value",)),
            "periods": adding(PERIODS, (*player_keys, "period"),
                              ("played", "won", "rating_change")),
            "meta": adding(META, ("name",), (), ("value",)),
            "matches": MATCHES.insert(),
        }

    def _write(self, db: Connection, changes: Changes) -> None:
        statements = self._statements
        if changes.progress:
            db.execute(statements["progress"], [
                {"game_id": p.game_id, "game_type": p.game_type, "applied_seq": p.applied_seq,
                 "first_event": p.first_event, "holders": ",".join(p.holders), "over": p.over}
                for p in changes.progress.values()])
        if changes.players:
            self._write_players(db, changes.players)
        if changes.counters:
            db.execute(statements["counters"], [
                {"subject": s, "game_type": g, "variant": v, "counter": c, "value": n}
                for (s, g, v, c), n in changes.counters.items()])
        if changes.periods:
            db.execute(statements["periods"], [
                {"subject": s, "game_type": g, "variant": v, "period": p,
                 "played": d.played, "won": d.won, "rating_change": d.rating_change}
                for (s, g, v, p), d in changes.periods.items()])
        if changes.matches:
            db.execute(statements["matches"], changes.matches)
        if changes.rated_matches is not None:
            db.execute(statements["meta"], [{"name": RATED_MATCHES,
                                             "value": changes.rated_matches}])

    def _write_players(self, db: Connection, players: Mapping[PlayerKey, PlayerDelta]) -> None:
        rows = []
        rated_rows = []
        for (subject, game_type, variant), delta in players.items():
            row = {"subject": subject, "game_type": game_type, "variant": variant,
                   "is_bot": delta.is_bot, "played": delta.played, "won": delta.won,
                   "lost": delta.lost, "abandoned": delta.abandoned,
                   "own_moves": delta.own_moves, "bot_moves": delta.bot_moves,
                   "rated": 0, "mu": 0.0, "sigma": 0.0, "ordinal": 0.0}
            if delta.rating is None:
                rows.append(row)
            else:
                row.update(rated=delta.rating.rated, mu=delta.rating.mu,
                           sigma=delta.rating.sigma, ordinal=delta.ordinal)
                rated_rows.append(row)
        if rows:
            db.execute(self._statements["players"], rows)
        if rated_rows:
            db.execute(self._statements["rated_players"], rated_rows)

    # Reads for the gRPC service ------------------------------------------------------
    # A reply that shows figures of two tables reads them in one statement: one snapshot
    # (PostgreSQL's READ COMMITTED gives every statement its own), so a batch committed
    # between two reads never shows as its counters without its matches, or the reverse.

    def unfinished_games(self) -> list[str]:
        """The games whose projection started but did not reach the final event."""
        with self._reading() as db:
            return [row.game_id for row in db.execute(
                select(PROGRESS.c.game_id).where(PROGRESS.c.over.is_(False)))]

    def forget(self, player_id: str, now_ms: int) -> None:
        """Mark ``player_id`` deleted (again: nothing changes)."""
        with self._transaction() as db:
            db.execute(self._insert(DELETED_PLAYERS).values(player_id=player_id,
                                                            deleted_ms=now_ms)
                       .on_conflict_do_nothing())

    def deleted_among(self, subjects: Iterable[str]) -> set[str]:
        """Those of ``subjects`` whose accounts were deleted."""
        wanted = list(subjects)
        if not wanted:
            return set()
        with self._reading() as db:
            return set(db.execute(select(DELETED_PLAYERS.c.player_id)
                                  .where(DELETED_PLAYERS.c.player_id.in_(wanted))).scalars())

    def player_figures(self, subject: str, game_type: int = 0,
                       variant: str = "") -> list[tuple[Any, dict[str, int]]]:
        """A subject's rows of ``stats_players`` (all games and variants unless filtered),
        each with its game counters, as one snapshot."""
        query = select(PLAYERS, COUNTERS.c.counter, COUNTERS.c.value).select_from(
            PLAYERS.outerjoin(COUNTERS, and_(COUNTERS.c.subject == PLAYERS.c.subject,
                                             COUNTERS.c.game_type == PLAYERS.c.game_type,
                                             COUNTERS.c.variant == PLAYERS.c.variant))
        ).where(PLAYERS.c.subject == subject)
        if game_type:
            query = query.where(PLAYERS.c.game_type == game_type)
        if variant:
            query = query.where(PLAYERS.c.variant == variant)
        figures: dict[tuple[int, str], tuple[Any, dict[str, int]]] = {}
        with self._reading() as db:
            for row in db.execute(query.order_by(PLAYERS.c.game_type, PLAYERS.c.variant)):
                _, counted = figures.setdefault((row.game_type, row.variant), (row, {}))
                if row.counter is not None:
                    counted[row.counter] = int(row.value)
        return list(figures.values())

    def rating_board(self, game_type: int, variant: str, *, after: tuple[float, str] | None,
                     limit: int) -> list[Any]:
        """Rated subjects by ordinal (best first, then subject), after the key ``after``."""
        query = select(PLAYERS).where(PLAYERS.c.game_type == game_type,
                                      PLAYERS.c.variant == variant, PLAYERS.c.rated > 0)
        if after is not None:
            ordinal, subject = after
            query = query.where(or_(PLAYERS.c.ordinal < ordinal,
                                    and_(PLAYERS.c.ordinal == ordinal,
                                         PLAYERS.c.subject > subject)))
        query = query.order_by(PLAYERS.c.ordinal.desc(), PLAYERS.c.subject).limit(limit)
        with self._reading() as db:
            return list(db.execute(query))

    def period_board(self, game_type: int, variant: str, period: str, *,
                     after: tuple[int, float, str] | None, limit: int) -> list[Any]:
        """Subjects of a period by wins, then rating change (best first), then subject;
        each row with the subject's current ``is_bot``, ``mu``, ``sigma`` and ``rated``."""
        query = select(PERIODS, PLAYERS.c.is_bot, PLAYERS.c.mu, PLAYERS.c.sigma,
                       PLAYERS.c.rated).select_from(PERIODS.outerjoin(PLAYERS, and_(
                           PLAYERS.c.subject == PERIODS.c.subject,
                           PLAYERS.c.game_type == PERIODS.c.game_type,
                           PLAYERS.c.variant == PERIODS.c.variant))
        ).where(PERIODS.c.game_type == game_type, PERIODS.c.variant == variant,
                PERIODS.c.period == period)
        if after is not None:
            won, change, subject = after
            query = query.where(or_(
                PERIODS.c.won < won,
                and_(PERIODS.c.won == won, PERIODS.c.rating_change < change),
                and_(PERIODS.c.won == won, PERIODS.c.rating_change == change,
                     PERIODS.c.subject > subject)))
        query = query.order_by(PERIODS.c.won.desc(), PERIODS.c.rating_change.desc(),
                               PERIODS.c.subject).limit(limit)
        with self._reading() as db:
            return list(db.execute(query))

    def history(self, subject: str, *, game_type: int, after: tuple[int, str, int] | None,
                limit: int) -> list[Any]:
        """A subject's finished matches, newest first, after the key ``after``
        (ended_at_ms, game_id, seat)."""
        query = select(MATCHES).where(MATCHES.c.subject == subject)
        if game_type:
            query = query.where(MATCHES.c.game_type == game_type)
        if after is not None:
            ended, game_id, seat = after
            query = query.where(or_(
                MATCHES.c.ended_at_ms < ended,
                and_(MATCHES.c.ended_at_ms == ended, MATCHES.c.game_id < game_id),
                and_(MATCHES.c.ended_at_ms == ended, MATCHES.c.game_id == game_id,
                     MATCHES.c.seat < seat)))
        query = query.order_by(MATCHES.c.ended_at_ms.desc(), MATCHES.c.game_id.desc(),
                               MATCHES.c.seat.desc()).limit(limit)
        with self._reading() as db:
            return list(db.execute(query))

    def all_rows(self, table: Table) -> list[Any]:
        """Every row of one of the stats tables (tests and the recomputation checks)."""
        with self._reading() as db:
            return list(db.execute(select(table)))
