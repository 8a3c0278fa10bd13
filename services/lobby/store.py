"""The lobby's tables in SQL (SQLModel): guests, tables, each table's updates, and each
match's table as it started.

SQLite is the embedded default and PostgreSQL the production store, at the same URL as the
event store (``Settings.store_url()``). The lobby's tables live in their own SQLModel
registry, apart from the event store's Alembic-managed metadata, and are created when
missing. A table is stored as its serialized ``dast.v1.Table`` plus the columns the lobby
queries by; every change bumps ``version`` under an optimistic check (``UPDATE … WHERE
version = :loaded``) and records its :class:`~dast.v1.lobby_pb2.TableUpdate` rows in the same
transaction, so a watch replays exactly what happened.

Errors::

    LobbyStoreError
     ├── TableNotFound   no such table (or invite code, or game)
     └── StaleTable      the table changed since it was loaded (retry on the fresh one)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Index,
    LargeBinary,
    String,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from dast.v1 import lobby_pb2
from services.lobby.tables import Update
from services.platform.sql_engine import SqlTables, open_tables
from services.platform.validation import quoted_input

_TABLE_STATUSES_OPEN = (lobby_pb2.TABLE_STATUS_WAITING,)


class LobbyModel(SQLModel, registry=registry()):
    """Base of the lobby's tables: their own metadata, apart from the event store's."""


class GuestRow(LobbyModel, table=True):
    """A device's guest identity."""

    __tablename__ = "lobby_guests"

    device_id: str = Field(sa_column=Column(String(128), primary_key=True))
    player_id: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    display_name: str = Field(sa_column=Column(String(64), nullable=False))


class TableRow(LobbyModel, table=True):
    """A table: the serialized ``dast.v1.Table`` and the columns queries filter on."""

    __tablename__ = "lobby_tables"
    __table_args__ = (
        Index("ix_lobby_tables_open", "status", "private", "game_type"),
        Index("ix_lobby_tables_game", "game_id"),
        Index("ix_lobby_tables_invite", "invite_code"),
    )

    table_id: str = Field(sa_column=Column(String(64), primary_key=True))
    version: int = Field(sa_column=Column(BigInteger, nullable=False))
    status: int = Field(nullable=False)
    game_type: int = Field(nullable=False)
    private: bool = Field(nullable=False)
    game_id: str = Field(sa_column=Column(String(64), nullable=False, default=""))
    invite_code: str = Field(sa_column=Column(String(16), nullable=False, default=""))
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class UpdateRow(LobbyModel, table=True):
    """One change of a table, keyed by the version it produced."""

    __tablename__ = "lobby_table_updates"

    table_id: str = Field(sa_column=Column(String(64), primary_key=True))
    version: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    ordinal: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    kind: int = Field(nullable=False)
    seat: int = Field(nullable=False)
    player_id: str = Field(sa_column=Column(String(64), nullable=False, default=""))
    at_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class MatchRow(LobbyModel, table=True):
    """A match as its table stood when it started: who played it, at which table (what a
    report about it checks, after a rematch has given the table another match)."""

    __tablename__ = "lobby_matches"

    game_id: str = Field(sa_column=Column(String(64), primary_key=True))
    table_id: str = Field(sa_column=Column(String(64), nullable=False))
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    """The serialized ``dast.v1.Table`` as the match started (its seats are the match's)."""


class FeedMarkRow(LobbyModel, table=True):
    """How far a table's updates reached the tables' feed (the feed's outbox watermark)."""

    __tablename__ = "lobby_feed_marks"

    table_id: str = Field(sa_column=Column(String(64), primary_key=True))
    published_version: int = Field(sa_column=Column(BigInteger, nullable=False))


GUESTS = GuestRow.__table__  # type: ignore[attr-defined]
TABLES = TableRow.__table__  # type: ignore[attr-defined]
UPDATES = UpdateRow.__table__  # type: ignore[attr-defined]
MATCHES = MatchRow.__table__  # type: ignore[attr-defined]
FEED_MARKS = FeedMarkRow.__table__  # type: ignore[attr-defined]


class LobbyStoreError(Exception):
    """Base of the lobby store's errors."""


class TableNotFound(LobbyStoreError):
    """No table has that id (or invite code, or game id)."""


class StaleTable(LobbyStoreError):
    """The table changed since it was loaded."""


def _table(body: bytes) -> lobby_pb2.Table:
    table = lobby_pb2.Table()
    table.ParseFromString(body)
    return table


class LobbyStore(SqlTables):
    """Guests and tables (synchronous, thread-safe; async code uses ``asyncio.to_thread``)."""

    @classmethod
    def open(cls, url: str | None) -> LobbyStore:
        """Open the lobby store at ``url`` (None: private in-memory SQLite), creating tables.

        :raises ValueError: if ``url`` is neither SQLite nor PostgreSQL.
        """
        return cls(open_tables(url, LobbyModel.metadata, owner="lobby"))

    def guest(self, device_id: str, display_name: str, new_player_id: str) -> tuple[str, str]:
        """The ``(player_id, display_name)`` of ``device_id``, registering it when new.

        A non-empty ``display_name`` renames a known guest.
        """
        for _ in range(2):
            with self._transaction() as db:
                row = db.execute(
                    select(GUESTS.c.player_id, GUESTS.c.display_name)
                    .where(GUESTS.c.device_id == device_id)
                ).first()
                if row is not None:
                    name = display_name or row.display_name
                    if name != row.display_name:
                        db.execute(update(GUESTS).where(GUESTS.c.device_id == device_id)
                                   .values(display_name=name))
                    return str(row.player_id), name
                name = display_name or f"Guest-{new_player_id[-4:]}"
                try:
                    db.execute(insert(GUESTS).values(
                        device_id=device_id, player_id=new_player_id, display_name=name))
                except IntegrityError:
                    continue  # another replica registered the device first: read theirs
                return new_player_id, name
        raise LobbyStoreError(f"cannot register device {quoted_input(device_id)}")

    def name_of(self, player_id: str) -> str:
        """The display name of a guest (the player id itself for anyone else)."""
        with self._lock, self._engine.connect() as db:
            row = db.execute(
                select(GUESTS.c.display_name).where(GUESTS.c.player_id == player_id)
            ).first()
        return str(row.display_name) if row is not None else player_id

    def create(
        self, table: lobby_pb2.Table, updates: Sequence[Update], at_ms: int
    ) -> lobby_pb2.Table:
        """Store a new table at version 1 with its updates."""
        table.version = 1
        with self._transaction() as db:
            db.execute(insert(TABLES).values(**self._columns(table)))
            self._record(db, table, updates, at_ms)
        return table

    def save(
        self, table: lobby_pb2.Table, loaded_version: int, updates: Sequence[Update], at_ms: int
    ) -> lobby_pb2.Table:
        """Store ``table`` as the next version after ``loaded_version`` with its updates.

        :raises StaleTable: if the stored table is not at ``loaded_version`` any more.
        """
        if not updates:
            return table
        table.version = loaded_version + 1
        with self._transaction() as db:
            result = db.execute(
                update(TABLES)
                .where(TABLES.c.table_id == table.table_id, TABLES.c.version == loaded_version)
                .values(**self._columns(table))
            )
            if result.rowcount != 1:
                raise StaleTable(f"table {quoted_input(table.table_id)} changed since version "
                                 f"{loaded_version}")
            self._record(db, table, updates, at_ms)
        return table

    @staticmethod
    def _columns(table: lobby_pb2.Table) -> dict[str, Any]:
        return {
            "table_id": table.table_id, "version": table.version, "status": table.status,
            "game_type": table.settings.game_type, "private": table.settings.private,
            "game_id": table.game_id, "invite_code": table.invite_code,
            "body": table.SerializeToString(deterministic=True),
        }

    @staticmethod
    def _record(db: Connection, table: lobby_pb2.Table, updates: Sequence[Update], at_ms: int
                ) -> None:
        db.execute(insert(UPDATES), [
            {"table_id": table.table_id, "version": table.version, "ordinal": index,
             "kind": item.kind, "seat": item.seat, "player_id": item.player_id, "at_ms": at_ms}
            for index, item in enumerate(updates)
        ])
        if any(item.kind == lobby_pb2.TABLE_UPDATE_KIND_GAME_STARTED for item in updates):
            db.execute(insert(MATCHES).values(
                game_id=table.game_id, table_id=table.table_id,
                body=table.SerializeToString(deterministic=True)))

    def _one(self, *conditions: Any) -> lobby_pb2.Table:
        with self._lock, self._engine.connect() as db:
            row = db.execute(select(TABLES.c.body).where(*conditions)).first()
        if row is None:
            raise TableNotFound("no such table")
        return _table(row.body)

    def get(self, table_id: str) -> lobby_pb2.Table:
        """The table ``table_id``.

        :raises TableNotFound: if there is none.
        """
        return self._one(TABLES.c.table_id == table_id)

    def by_invite(self, invite_code: str) -> lobby_pb2.Table:
        """The private table with ``invite_code``.

        :raises TableNotFound: if there is none.
        """
        if not invite_code:
            raise TableNotFound("empty invite code")
        return self._one(TABLES.c.invite_code == invite_code)

    def match_table(self, game_id: str) -> lobby_pb2.Table:
        """The table of the match ``game_id`` as it stood when the match started (its seats
        are the match's players), or, for a match started before the lobby kept them, the
        table playing it now.

        :raises TableNotFound: if no table played it.
        """
        with self._lock, self._engine.connect() as db:
            body = db.execute(select(MATCHES.c.body).where(MATCHES.c.game_id == game_id)
                              ).scalar_one_or_none()
        return _table(body) if body is not None else self.by_game(game_id)

    def by_game(self, game_id: str) -> lobby_pb2.Table:
        """The table whose current match is ``game_id``.

        :raises TableNotFound: if there is none.
        """
        if not game_id:
            raise TableNotFound("empty game id")
        return self._one(TABLES.c.game_id == game_id)

    def listed(self, game_type: int, *, include_playing: bool, limit: int = 100,
               after: str = "", include_private: bool = False) -> list[lobby_pb2.Table]:
        """Public (and, if asked, private) tables waiting (and playing, if asked), by table
        id, after the table id ``after``."""
        statuses = [lobby_pb2.TABLE_STATUS_WAITING]
        if include_playing:
            statuses.append(lobby_pb2.TABLE_STATUS_PLAYING)
        query = select(TABLES.c.body).where(TABLES.c.status.in_(statuses))
        if not include_private:
            query = query.where(TABLES.c.private.is_(False))
        if after:
            query = query.where(TABLES.c.table_id > after)
        if game_type:
            query = query.where(TABLES.c.game_type == game_type)
        with self._lock, self._engine.connect() as db:
            rows = db.execute(query.order_by(TABLES.c.table_id).limit(limit)).all()
        return [_table(row.body) for row in rows]

    def unfinished(self) -> list[lobby_pb2.Table]:
        """Every table waiting or playing, private ones too (a banned player is taken out of
        each of theirs: rare enough to read them all)."""
        query = select(TABLES.c.body).where(TABLES.c.status.in_(
            [lobby_pb2.TABLE_STATUS_WAITING, lobby_pb2.TABLE_STATUS_PLAYING]))
        with self._lock, self._engine.connect() as db:
            return [_table(row.body) for row in db.execute(query).all()]

    def playing(self) -> list[lobby_pb2.Table]:
        """Every table whose match is on."""
        query = select(TABLES.c.body).where(TABLES.c.status == lobby_pb2.TABLE_STATUS_PLAYING)
        with self._lock, self._engine.connect() as db:
            return [_table(row.body) for row in db.execute(query).all()]

    def updates_after(self, table_id: str, version: int) -> list[lobby_pb2.TableUpdate]:
        """The recorded updates of ``table_id`` with a version above ``version``, in order."""
        query = (
            select(UPDATES).where(UPDATES.c.table_id == table_id, UPDATES.c.version > version)
            .order_by(UPDATES.c.version, UPDATES.c.ordinal)
        )
        with self._lock, self._engine.connect() as db:
            rows = db.execute(query).all()
        return [
            lobby_pb2.TableUpdate(kind=row.kind, seat=row.seat, player_id=row.player_id,
                                  version=row.version, at_ms=row.at_ms)
            for row in rows
        ]

    def unpublished(self, *, limit_tables: int = 100) -> list[list[lobby_pb2.TableUpdate]]:
        """Recorded updates not yet on the tables' feed, one list per table version in
        order, each update carrying its table as it stands now (invite code removed)."""
        published = (
            select(FEED_MARKS.c.published_version)
            .where(FEED_MARKS.c.table_id == TABLES.c.table_id).scalar_subquery()
        )
        behind = (
            select(TABLES.c.table_id, TABLES.c.body)
            .where(TABLES.c.version > func.coalesce(published, 0))
            .order_by(TABLES.c.table_id).limit(limit_tables)
        )
        with self._lock, self._engine.connect() as db:
            tables = db.execute(behind).all()
            marks: dict[str, int] = {
                mark.table_id: mark.published_version for mark in db.execute(
                    select(FEED_MARKS.c.table_id, FEED_MARKS.c.published_version)
                    .where(FEED_MARKS.c.table_id.in_([row.table_id for row in tables]))
                )
            }
            versions: list[list[lobby_pb2.TableUpdate]] = []
            for row in tables:
                table = _table(row.body)
                table.invite_code = ""
                rows = db.execute(
                    select(UPDATES).where(UPDATES.c.table_id == row.table_id,
                                          UPDATES.c.version > marks.get(row.table_id, 0))
                    .order_by(UPDATES.c.version, UPDATES.c.ordinal)
                ).all()
                for update in rows:
                    if not versions or versions[-1][0].version != update.version or (
                        versions[-1][0].table.table_id != row.table_id
                    ):
                        versions.append([])
                    versions[-1].append(lobby_pb2.TableUpdate(
                        kind=update.kind, seat=update.seat, player_id=update.player_id,
                        version=update.version, at_ms=update.at_ms, table=table))
        return versions

    def mark_published(self, table_id: str, version: int) -> None:
        """Record that ``table_id``'s updates up to ``version`` are on the feed (never
        moving the mark back: two lobby replicas may publish the same versions)."""
        for _ in range(2):
            try:
                with self._transaction() as db:
                    moved = db.execute(
                        update(FEED_MARKS)
                        .where(FEED_MARKS.c.table_id == table_id,
                               FEED_MARKS.c.published_version < version)
                        .values(published_version=version)
                    )
                    if moved.rowcount or db.execute(
                        select(FEED_MARKS.c.table_id).where(FEED_MARKS.c.table_id == table_id)
                    ).first() is not None:
                        return
                    db.execute(insert(FEED_MARKS).values(table_id=table_id,
                                                         published_version=version))
                    return
            except IntegrityError:
                continue  # another replica inserted the mark first: move it forward
