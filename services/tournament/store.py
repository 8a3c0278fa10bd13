"""The tournament service's tables in SQL (SQLModel): every tournament's append-only log.

SQLite is the embedded default and PostgreSQL the production store, at the same URL as the
other services (``Settings.store_url()``), in tables of the service's own (``tournament_*``,
their own SQLModel registry, created when missing). A tournament's events are keyed by
``(tournament_id, seq)``: as for the games' logs (docs/architecture.md "Event store and
bus"), a step's events are appended in one transaction and the head row moves only from the
seq the step was decided on (``UPDATE … WHERE last_seq = :expected``), so of two replicas
deciding the same step one commits and the other gets :class:`ConcurrencyConflict`,
reloads and finds the step done.

Beside the log, the same transaction keeps what the service looks things up by: the head
row (status, round, the round's deadline, a summary for listings, how far the log reached
the bus) and the index of the tournament's matches by game id, so that a game's final event
on the bus finds its tournament in one query. All of it follows from the log.

Errors::

    TournamentStoreError
     ├── TournamentNotFound    no such tournament
     ├── TournamentExists      create for an id already taken
     └── ConcurrencyConflict   the log moved on since the step was decided (reload, retry)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Index,
    Integer,
    LargeBinary,
    String,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from dast.v1 import tournament_pb2
from services.platform.sql_engine import SqlTables, open_tables

ID_LENGTH = 64


class TournamentModel(SQLModel, registry=registry()):
    """Base of the tournament service's tables: their own metadata."""


class HeadRow(TournamentModel, table=True):
    """One tournament: the head of its log and what listings and timers read."""

    __tablename__ = "tournament_heads"
    __table_args__ = (Index("ix_tournament_heads_status", "status", "created_at_ms"),)

    tournament_id: str = Field(sa_column=Column(String(ID_LENGTH), primary_key=True))
    last_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    last_hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    status: int = Field(sa_column=Column(Integer, nullable=False))
    round_deadline_ms: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    created_at_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    published_seq: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    summary: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    """The serialized ``dast.v1.TournamentSummary`` as of ``last_seq``."""


class EventRow(TournamentModel, table=True):
    """One event of a tournament's log: its bytes and its chain hash."""

    __tablename__ = "tournament_events"

    tournament_id: str = Field(sa_column=Column(String(ID_LENGTH), primary_key=True))
    seq: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    at_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class MatchRow(TournamentModel, table=True):
    """A match a tournament's log assigned: which tournament, round and table it plays."""

    __tablename__ = "tournament_matches"
    __table_args__ = (Index("ix_tournament_matches_tournament", "tournament_id", "round"),)

    game_id: str = Field(sa_column=Column(String(ID_LENGTH), primary_key=True))
    tournament_id: str = Field(sa_column=Column(String(ID_LENGTH), nullable=False))
    round: int = Field(sa_column=Column(Integer, nullable=False))
    table: int = Field(sa_column=Column(Integer, nullable=False))


HEADS = HeadRow.__table__  # type: ignore[attr-defined]
EVENTS = EventRow.__table__  # type: ignore[attr-defined]
MATCHES = MatchRow.__table__  # type: ignore[attr-defined]


class TournamentStoreError(Exception):
    """Base of the tournament store's errors."""


class TournamentNotFound(TournamentStoreError):
    """No tournament has that id."""


class TournamentExists(TournamentStoreError):
    """A tournament of that id exists already."""


class ConcurrencyConflict(TournamentStoreError):
    """The tournament's log moved past the seq a step was decided on."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One stored event of a tournament's log."""

    seq: int
    body: bytes
    hash: bytes
    at_ms: int


@dataclass(frozen=True, slots=True)
class MatchPlace:
    """Where a match belongs: its tournament, round and table."""

    game_id: str
    tournament_id: str
    round: int
    table: int


@dataclass(frozen=True, slots=True)
class Head:
    """What the head row says of a tournament."""

    tournament_id: str
    last_seq: int
    status: int
    round_deadline_ms: int
    published_seq: int


@dataclass(frozen=True, slots=True)
class Step:
    """What one step appends: its events and the head and index rows moving with them."""

    events: Sequence[StoredEvent]
    summary: tournament_pb2.TournamentSummary
    round_deadline_ms: int = 0
    matches: Sequence[MatchPlace] = ()


def _summary(body: bytes) -> tournament_pb2.TournamentSummary:
    summary = tournament_pb2.TournamentSummary()
    summary.ParseFromString(body)
    return summary


class TournamentStore(SqlTables):
    """Every tournament's log (synchronous, thread-safe; async code uses
    ``asyncio.to_thread``)."""

    @classmethod
    def open(cls, url: str | None) -> TournamentStore:
        """Open the store at ``url`` (None: private in-memory SQLite), creating its tables.

        :raises ValueError: if ``url`` is neither SQLite nor PostgreSQL.
        """
        return cls(open_tables(url, TournamentModel.metadata, owner="tournament",
                               pool_size=8))

    def create(self, tournament_id: str, step: Step, *, created_at_ms: int) -> None:
        """Store a new tournament whose log starts with ``step``'s events (seq 1 on).

        :raises TournamentExists: if the id is taken.
        :raises ValueError: if the events do not start at seq 1 and follow each other.
        """
        _check_seqs(step.events, 0)
        try:
            with self._transaction() as db:
                db.execute(insert(HEADS).values(
                    tournament_id=tournament_id, last_seq=step.events[-1].seq,
                    last_hash=step.events[-1].hash, status=step.summary.status,
                    round_deadline_ms=step.round_deadline_ms, created_at_ms=created_at_ms,
                    published_seq=0, summary=step.summary.SerializeToString(deterministic=True),
                ))
                self._write(db, tournament_id, step)
        except IntegrityError as error:
            raise TournamentExists(f"tournament {tournament_id} exists") from error

    def append(self, tournament_id: str, expected_seq: int, step: Step) -> None:
        """Append ``step`` to a log whose last seq is ``expected_seq``, atomically.

        :raises TournamentNotFound: if there is no such tournament.
        :raises ConcurrencyConflict: if the log moved past ``expected_seq``.
        :raises ValueError: if the events do not follow ``expected_seq`` one by one.
        """
        _check_seqs(step.events, expected_seq)
        try:
            with self._transaction() as db:
                moved = db.execute(
                    update(HEADS)
                    .where(HEADS.c.tournament_id == tournament_id,
                           HEADS.c.last_seq == expected_seq)
                    .values(last_seq=step.events[-1].seq, last_hash=step.events[-1].hash,
                            status=step.summary.status,
                            round_deadline_ms=step.round_deadline_ms,
                            summary=step.summary.SerializeToString(deterministic=True))
                )
                if moved.rowcount != 1:
                    head = db.execute(select(HEADS.c.last_seq).where(
                        HEADS.c.tournament_id == tournament_id)).first()
                    if head is None:
                        raise TournamentNotFound(f"no tournament {tournament_id}")
                    raise ConcurrencyConflict(
                        f"tournament {tournament_id} is at seq {head.last_seq}, "
                        f"not {expected_seq}")
                self._write(db, tournament_id, step)
        except IntegrityError as error:
            # The primary key (tournament_id, seq): a writer that skipped the head's check.
            raise ConcurrencyConflict(f"tournament {tournament_id}: seq taken") from error

    @staticmethod
    def _write(db: Connection, tournament_id: str, step: Step) -> None:
        db.execute(insert(EVENTS), [
            {"tournament_id": tournament_id, "seq": stored.seq, "body": stored.body,
             "hash": stored.hash, "at_ms": stored.at_ms}
            for stored in step.events
        ])
        if step.matches:
            db.execute(insert(MATCHES), [
                {"game_id": match.game_id, "tournament_id": tournament_id,
                 "round": match.round, "table": match.table}
                for match in step.matches
            ])

    def load(self, tournament_id: str, after_seq: int = 0) -> list[StoredEvent]:
        """The tournament's events with seq > ``after_seq``, in order.

        :raises TournamentNotFound: if there is no such tournament.
        """
        with self._reading() as db:
            rows = db.execute(
                select(EVENTS.c.seq, EVENTS.c.body, EVENTS.c.hash, EVENTS.c.at_ms)
                .where(EVENTS.c.tournament_id == tournament_id, EVENTS.c.seq > after_seq)
                .order_by(EVENTS.c.seq)
            ).all()
            if not rows and after_seq == 0:
                exists = db.execute(select(HEADS.c.tournament_id).where(
                    HEADS.c.tournament_id == tournament_id)).first()
                if exists is None:
                    raise TournamentNotFound(f"no tournament {tournament_id}")
        return [StoredEvent(row.seq, row.body, row.hash, row.at_ms) for row in rows]

    def head(self, tournament_id: str) -> Head:
        """The tournament's head row.

        :raises TournamentNotFound: if there is no such tournament.
        """
        with self._reading() as db:
            row = db.execute(
                select(HEADS.c.tournament_id, HEADS.c.last_seq, HEADS.c.status,
                       HEADS.c.round_deadline_ms, HEADS.c.published_seq)
                .where(HEADS.c.tournament_id == tournament_id)
            ).first()
        if row is None:
            raise TournamentNotFound(f"no tournament {tournament_id}")
        return Head(row.tournament_id, row.last_seq, row.status, row.round_deadline_ms,
                    row.published_seq)

    def summary(self, tournament_id: str) -> tournament_pb2.TournamentSummary:
        """The tournament's summary as of its last step.

        :raises TournamentNotFound: if there is no such tournament.
        """
        with self._reading() as db:
            row = db.execute(select(HEADS.c.summary).where(
                HEADS.c.tournament_id == tournament_id)).first()
        if row is None:
            raise TournamentNotFound(f"no tournament {tournament_id}")
        return _summary(row.summary)

    def listed(self, status: int, limit: int) -> list[tournament_pb2.TournamentSummary]:
        """Tournaments (in ``status``, unless it is 0), newest first."""
        query = select(HEADS.c.summary)
        if status:
            query = query.where(HEADS.c.status == status)
        query = query.order_by(HEADS.c.created_at_ms.desc(), HEADS.c.tournament_id).limit(limit)
        with self._reading() as db:
            return [_summary(row.summary) for row in db.execute(query).all()]

    def heads_in(self, status: int) -> list[Head]:
        """The head rows of every tournament in ``status``."""
        with self._reading() as db:
            rows = db.execute(
                select(HEADS.c.tournament_id, HEADS.c.last_seq, HEADS.c.status,
                       HEADS.c.round_deadline_ms, HEADS.c.published_seq)
                .where(HEADS.c.status == status)
            ).all()
        return [Head(row.tournament_id, row.last_seq, row.status, row.round_deadline_ms,
                     row.published_seq) for row in rows]

    def place_of(self, game_id: str) -> MatchPlace | None:
        """The tournament, round and table of the match ``game_id`` (None: not a
        tournament's match)."""
        with self._reading() as db:
            row = db.execute(select(MATCHES).where(MATCHES.c.game_id == game_id)).first()
        if row is None:
            return None
        return MatchPlace(row.game_id, row.tournament_id, row.round, row.table)

    def unpublished(self, limit: int = 100) -> list[Head]:
        """Tournaments whose log has events the bus has not been sent yet."""
        with self._reading() as db:
            rows = db.execute(
                select(HEADS.c.tournament_id, HEADS.c.last_seq, HEADS.c.status,
                       HEADS.c.round_deadline_ms, HEADS.c.published_seq)
                .where(HEADS.c.published_seq < HEADS.c.last_seq).limit(limit)
            ).all()
        return [Head(row.tournament_id, row.last_seq, row.status, row.round_deadline_ms,
                     row.published_seq) for row in rows]

    def mark_published(self, tournament_id: str, seq: int) -> None:
        """Record that the log up to ``seq`` reached the bus (never moving the mark back:
        replicas may publish the same events; the bus drops the repeats)."""
        with self._transaction() as db:
            db.execute(
                update(HEADS)
                .where(HEADS.c.tournament_id == tournament_id, HEADS.c.published_seq < seq)
                .values(published_seq=seq)
            )


def _check_seqs(events: Sequence[StoredEvent], last_seq: int) -> None:
    if not events:
        raise ValueError("a step appends at least one event")
    for offset, stored in enumerate(events, start=1):
        if stored.seq != last_seq + offset:
            raise ValueError(f"seq {stored.seq} does not follow {last_seq + offset - 1}")
