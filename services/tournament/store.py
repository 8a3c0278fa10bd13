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
the bus), the listing row (host, game, status, whether it is featured and open) and the
index of the tournament's matches by game id, so that a game's final event on the bus finds
its tournament in one query. All of it follows from the log (and, for the host and whether
an operator created it, from the creation), except the names: the name each player (or bot
entrant) registered under is kept in ``tournament_names``, written with the step that
registered it, never in the log (a signed log cannot change, and an erased account's name
must go: :meth:`TournamentStore.erase_names` blanks it).

Listings page by key (:class:`Position`: featured and open first, then newest first, then by
id), so a tournament created while someone pages sorts before the pages already read and
never shifts the next ones. A player's open tournaments are counted in the transaction that
creates another (on PostgreSQL under a lock of the host's, so two replicas creating at once
for one host take turns), so the limit holds against concurrent calls.

Listing rows came after the first tournaments: opening the store writes the missing ones
from the heads' summaries (:meth:`TournamentStore.open`).

Errors::

    TournamentStoreError
     ├── TournamentNotFound    no such tournament
     ├── TournamentExists      create for an id already taken
     ├── OpenLimitReached      the host has as many open tournaments as allowed
     └── ConcurrencyConflict   the log moved on since the step was decided (reload, retry)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ColumnElement,
    Connection,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    and_,
    delete,
    exists,
    false,
    func,
    insert,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from dast.v1 import tournament_pb2
from services.platform.sql_engine import SqlTables, open_tables
from services.platform.validation import MAX_ID_CHARS, quoted_input

ID_LENGTH = 64
OPEN_STATUSES: Final = (tournament_pb2.TOURNAMENT_STATUS_REGISTERING,
                        tournament_pb2.TOURNAMENT_STATUS_RUNNING)
"""The statuses of a tournament that still counts against its host's limit (and that a
featured tournament is listed first in)."""


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


class ListingRow(TournamentModel, table=True):
    """What listings filter and sort a tournament by."""

    __tablename__ = "tournament_listings"
    __table_args__ = (
        Index("ix_tournament_listings_order", "promoted", "created_at_ms", "tournament_id"),
        Index("ix_tournament_listings_status", "status", "promoted", "created_at_ms"),
        Index("ix_tournament_listings_host", "host_id", "status"),
    )

    tournament_id: str = Field(sa_column=Column(String(ID_LENGTH), primary_key=True))
    host_id: str = Field(sa_column=Column(String(MAX_ID_CHARS), nullable=False))
    by_operator: bool = Field(sa_column=Column(Boolean, nullable=False))
    game_type: int = Field(sa_column=Column(Integer, nullable=False))
    status: int = Field(sa_column=Column(Integer, nullable=False))
    promoted: bool = Field(sa_column=Column(Boolean, nullable=False))
    """Featured and open: listed first."""
    created_at_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class MatchRow(TournamentModel, table=True):
    """A match a tournament's log assigned: which tournament, round and table it plays."""

    __tablename__ = "tournament_matches"
    __table_args__ = (Index("ix_tournament_matches_tournament", "tournament_id", "round"),)

    game_id: str = Field(sa_column=Column(String(ID_LENGTH), primary_key=True))
    tournament_id: str = Field(sa_column=Column(String(ID_LENGTH), nullable=False))
    round: int = Field(sa_column=Column(Integer, nullable=False))
    table: int = Field(sa_column=Column(Integer, nullable=False))


class NameRow(TournamentModel, table=True):
    """The display name a player (or a bot entrant) registered under in a tournament, kept
    beside its log (``deleted``: blanked by the player's erasure)."""

    __tablename__ = "tournament_names"
    __table_args__ = (Index("ix_tournament_names_player", "player_id"),)

    tournament_id: str = Field(sa_column=Column(String(ID_LENGTH), primary_key=True))
    player_id: str = Field(sa_column=Column(Text, primary_key=True))
    display_name: str = Field(sa_column=Column(Text, nullable=False))
    deleted: bool = Field(sa_column=Column(Boolean, nullable=False, default=False))


HEADS = HeadRow.__table__  # type: ignore[attr-defined]
NAMES = NameRow.__table__  # type: ignore[attr-defined]
EVENTS = EventRow.__table__  # type: ignore[attr-defined]
MATCHES = MatchRow.__table__  # type: ignore[attr-defined]
LISTINGS = ListingRow.__table__  # type: ignore[attr-defined]


class TournamentStoreError(Exception):
    """Base of the tournament store's errors."""


class TournamentNotFound(TournamentStoreError):
    """No tournament has that id."""


class TournamentExists(TournamentStoreError):
    """A tournament of that id exists already."""


class ConcurrencyConflict(TournamentStoreError):
    """The tournament's log moved past the seq a step was decided on."""


class OpenLimitReached(TournamentStoreError):
    """The host has ``open`` open tournaments, as many as a create allowed."""

    def __init__(self, host_id: str, open_count: int) -> None:
        super().__init__(f"{host_id} hosts {open_count} open tournaments")
        self.open_count = open_count


def _not_found(tournament_id: str) -> TournamentNotFound:
    """The error for an id no tournament has (quoting what a message may of a caller's id)."""
    return TournamentNotFound(f"no tournament has the id {quoted_input(tournament_id)}")


@dataclass(frozen=True, slots=True)
class Position:
    """Where a tournament sorts in listings: featured and open first, then newest first,
    then by id (the key pages continue after)."""

    promoted: bool
    created_at_ms: int
    tournament_id: str


@dataclass(frozen=True, slots=True)
class Listed:
    """A tournament of a listing page: its summary and its position."""

    summary: tournament_pb2.TournamentSummary
    position: Position


@dataclass(frozen=True, slots=True)
class ListingQuery:
    """Which tournaments a listing shows (0 / False: no filter)."""

    status: int = 0
    game_type: int = 0
    by_operator: bool = False


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
    names: Sequence[tuple[str, str]] = ()
    """``(player_id, display_name)`` of who registered (or asked for a partner) in the
    step: kept beside the log, replacing the player's earlier name."""


@dataclass(frozen=True, slots=True)
class KeptName:
    """A name kept beside a tournament's log."""

    display_name: str
    deleted: bool = False


def _summary(body: bytes) -> tournament_pb2.TournamentSummary:
    summary = tournament_pb2.TournamentSummary()
    summary.ParseFromString(body)
    return summary


def is_promoted(summary: tournament_pb2.TournamentSummary) -> bool:
    """Whether listings show the tournament first: featured, and still open."""
    return summary.featured and summary.status in OPEN_STATUSES


def _listing_of(summary: tournament_pb2.TournamentSummary, created_at_ms: int
                ) -> dict[str, object]:
    return {"tournament_id": summary.tournament_id, "host_id": summary.host_id,
            "by_operator": summary.created_by_operator,
            "game_type": summary.settings.game_type, "status": summary.status,
            "promoted": is_promoted(summary), "created_at_ms": created_at_ms}


def _host_lock_key(host_id: str) -> int:
    """A PostgreSQL advisory lock key of the host's creations (64 bits of a digest)."""
    digest = hashlib.sha256(f"dast.tournament.host:{host_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class TournamentStore(SqlTables):
    """Every tournament's log (synchronous, thread-safe; async code uses
    ``asyncio.to_thread``)."""

    @classmethod
    def open(cls, url: str | None) -> TournamentStore:
        """Open the store at ``url`` (None: private in-memory SQLite), creating its tables.

        :raises ValueError: if ``url`` is neither SQLite nor PostgreSQL.
        """
        opened = cls(open_tables(url, TournamentModel.metadata, owner="tournament",
                                 pool_size=8))
        opened.write_missing_listings()
        return opened

    def write_missing_listings(self) -> int:
        """Write the listing row of every tournament stored without one (stored before
        listings existed), from its head; how many were written."""
        with self._transaction() as db:
            rows = db.execute(
                select(HEADS.c.created_at_ms, HEADS.c.summary).where(~exists(
                    select(LISTINGS.c.tournament_id)
                    .where(LISTINGS.c.tournament_id == HEADS.c.tournament_id)))
            ).all()
            if not rows:
                return 0
            try:
                db.execute(insert(LISTINGS), [_listing_of(_summary(row.summary),
                                                          row.created_at_ms)
                                              for row in rows])
            except IntegrityError:
                return 0  # another replica opening at the same moment wrote them
        return len(rows)

    def create(self, tournament_id: str, step: Step, *, created_at_ms: int,
               open_limit: int | None = None) -> None:
        """Store a new tournament whose log starts with ``step``'s events (seq 1 on), hosted
        by ``step.summary.host_id``; with ``open_limit``, only while the host has fewer open
        tournaments than that.

        :raises TournamentExists: if the id is taken.
        :raises OpenLimitReached: if the host has ``open_limit`` open tournaments already.
        :raises ValueError: if the events do not start at seq 1 and follow each other.
        """
        _check_seqs(step.events, 0)
        host_id = step.summary.host_id
        try:
            with self._transaction() as db:
                if open_limit is not None:
                    self._check_open_limit(db, host_id, open_limit)
                db.execute(insert(LISTINGS).values(**_listing_of(step.summary, created_at_ms)))
                db.execute(insert(HEADS).values(
                    tournament_id=tournament_id, last_seq=step.events[-1].seq,
                    last_hash=step.events[-1].hash, status=step.summary.status,
                    round_deadline_ms=step.round_deadline_ms, created_at_ms=created_at_ms,
                    published_seq=0, summary=step.summary.SerializeToString(deterministic=True),
                ))
                self._write(db, tournament_id, step)
        except IntegrityError as error:
            raise TournamentExists(f"tournament {tournament_id} exists") from error

    def _check_open_limit(self, db: Connection, host_id: str, limit: int) -> None:
        if db.dialect.name == "postgresql":
            # Two replicas creating for one host at once: the second waits for the first's
            # commit, then counts it (SQLite's writers take turns anyway).
            db.execute(select(func.pg_advisory_xact_lock(_host_lock_key(host_id))))
        count = db.execute(
            select(func.count()).select_from(LISTINGS)
            .where(LISTINGS.c.host_id == host_id, LISTINGS.c.status.in_(OPEN_STATUSES))
        ).scalar_one()
        if count >= limit:
            raise OpenLimitReached(host_id, count)

    def open_count(self, host_id: str) -> int:
        """How many open tournaments ``host_id`` hosts."""
        with self._reading() as db:
            count: int = db.execute(
                select(func.count()).select_from(LISTINGS)
                .where(LISTINGS.c.host_id == host_id, LISTINGS.c.status.in_(OPEN_STATUSES))
            ).scalar_one()
        return count

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
                        raise _not_found(tournament_id)
                    raise ConcurrencyConflict(
                        f"tournament {tournament_id} is at seq {head.last_seq}, "
                        f"not {expected_seq}")
                db.execute(update(LISTINGS).where(LISTINGS.c.tournament_id == tournament_id)
                           .values(status=step.summary.status,
                                   promoted=is_promoted(step.summary)))
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
        for player_id, display_name in step.names:
            db.execute(delete(NAMES).where(NAMES.c.tournament_id == tournament_id,
                                           NAMES.c.player_id == player_id))
            db.execute(insert(NAMES).values(tournament_id=tournament_id, player_id=player_id,
                                            display_name=display_name, deleted=False))
        if step.matches:
            db.execute(insert(MATCHES), [
                {"game_id": match.game_id, "tournament_id": tournament_id,
                 "round": match.round, "table": match.table}
                for match in step.matches
            ])

    def names_of(self, tournament_id: str) -> dict[str, KeptName]:
        """The names kept for the tournament, by player id (empty for a tournament stored
        before names left the logs: its log holds them)."""
        with self._reading() as db:
            rows = db.execute(select(NAMES.c.player_id, NAMES.c.display_name, NAMES.c.deleted)
                              .where(NAMES.c.tournament_id == tournament_id)).all()
        return {row.player_id: KeptName(row.display_name, bool(row.deleted)) for row in rows}

    def erase_names(self, player_id: str) -> int:
        """Blank ``player_id``'s names in every tournament (an erased account), marking them
        deleted; how many changed (0 the second time)."""
        with self._transaction() as db:
            changed = db.execute(update(NAMES).where(NAMES.c.player_id == player_id,
                                                     NAMES.c.deleted.is_(False))
                                 .values(display_name="", deleted=True)).rowcount
        return int(changed)

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
                head = db.execute(select(HEADS.c.tournament_id).where(
                    HEADS.c.tournament_id == tournament_id)).first()
                if head is None:
                    raise _not_found(tournament_id)
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
            raise _not_found(tournament_id)
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
            raise _not_found(tournament_id)
        return _summary(row.summary)

    def listed(self, query: ListingQuery, limit: int, after: Position | None = None
               ) -> list[Listed]:
        """At most ``limit`` tournaments ``query`` selects, in listing order (featured and
        open first, then newest first, then by id), from the one after ``after`` on."""
        statement = (
            select(HEADS.c.summary, LISTINGS.c.promoted, LISTINGS.c.created_at_ms,
                   LISTINGS.c.tournament_id)
            .join(HEADS, HEADS.c.tournament_id == LISTINGS.c.tournament_id)
        )
        if query.status:
            statement = statement.where(LISTINGS.c.status == query.status)
        if query.game_type:
            statement = statement.where(LISTINGS.c.game_type == query.game_type)
        if query.by_operator:
            statement = statement.where(LISTINGS.c.by_operator == true())
        if after is not None:
            statement = statement.where(_after(after))
        statement = statement.order_by(
            LISTINGS.c.promoted.desc(), LISTINGS.c.created_at_ms.desc(),
            LISTINGS.c.tournament_id).limit(limit)
        with self._reading() as db:
            rows = db.execute(statement).all()
        listed = []
        for row in rows:
            summary = _summary(row.summary)
            listed.append(Listed(summary, Position(bool(row.promoted), row.created_at_ms,
                                                   row.tournament_id)))
        return listed

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


def _after(position: Position) -> ColumnElement[bool]:
    """The listing rows that sort after ``position`` (promoted ones first, then newest
    first, then by id)."""
    promoted, created, tournament_id = (
        LISTINGS.c.promoted, LISTINGS.c.created_at_ms, LISTINGS.c.tournament_id)
    same = promoted == (true() if position.promoted else false())
    later = and_(same, or_(created < position.created_at_ms, and_(
        created == position.created_at_ms, tournament_id > position.tournament_id)))
    if position.promoted:
        return or_(promoted == false(), later)
    return later


def _check_seqs(events: Sequence[StoredEvent], last_seq: int) -> None:
    if not events:
        raise ValueError("a step appends at least one event")
    for offset, stored in enumerate(events, start=1):
        if stored.seq != last_seq + offset:
            raise ValueError(f"seq {stored.seq} does not follow {last_seq + offset - 1}")
