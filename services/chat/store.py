"""Table talk's and reports' tables in SQL (SQLModel): players' reports and their mutes.

The talk itself is not here (:mod:`services.chat.talk_log`): only what must outlive a
process and be queried. SQLite is the embedded default and PostgreSQL the production store,
at the same URL as the other services' tables (``Settings.store_url()``); every table's
name starts with ``chat_``. On PostgreSQL the tables come from the Alembic revision 0009
(``services/platform/migrations/versions``, run by :meth:`ChatStore.open`); on SQLite from
these models. Keep the two in step (``tests/services/platform/test_migrations.py``
compares them).

A report is kept for the reports' retention age and no longer: :meth:`ChatStore.reports`
never returns an older one, and :meth:`ChatStore.delete_reports_before` deletes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import BigInteger, Column, Index, Integer, String, delete, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from services.platform.sql_engine import SqlTables, open_sql_engine, open_tables

PLAYER_ID_CHARS: Final = 64
GAME_ID_CHARS: Final = 128
NOTE_CHARS: Final = 256
LARGEST_NUMBER: Final = 2**63 - 1
"""Largest id or seq a SQL column (or a JetStream start sequence, plus one) holds; the
API's are unsigned 64-bit."""


class ChatModel(SQLModel, registry=registry()):
    """Base of table talk's tables: their own metadata, apart from every other service's."""


class ReportRow(ChatModel, table=True):
    """A player's report of another player of a match."""

    __tablename__ = "chat_reports"
    __table_args__ = (
        Index("ix_chat_reports_created", "created_ms"),
        Index("ix_chat_reports_reported", "reported_id"),
    )

    report_id: int = Field(sa_column=Column(BigInteger().with_variant(Integer(), "sqlite"),
                                            primary_key=True, autoincrement=True))
    reporter_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    reported_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    game_id: str = Field(sa_column=Column(String(GAME_ID_CHARS), nullable=False))
    table_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    """The game's event the report is about (0: the match as a whole)."""
    category: int = Field(sa_column=Column(Integer, nullable=False))
    """A ``dast.v1.ReportCategory`` value."""
    note: str = Field(sa_column=Column(String(NOTE_CHARS), nullable=False))
    created_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class MuteRow(ChatModel, table=True):
    """A player muted for another: the muted player's messages no longer reach them."""

    __tablename__ = "chat_mutes"

    player_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), primary_key=True))
    muted_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), primary_key=True))
    muted_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


REPORTS = ReportRow.__table__  # type: ignore[attr-defined]
MUTES = MuteRow.__table__  # type: ignore[attr-defined]
TABLES: Final = (REPORTS, MUTES)


@dataclass(frozen=True, slots=True)
class NewReport:
    """A report to store (its id and time are the store's)."""

    reporter_id: str
    reported_id: str
    game_id: str
    table_id: str
    seq: int
    category: int
    note: str


@dataclass(frozen=True, slots=True)
class Report(NewReport):
    """A report as stored."""

    report_id: int
    created_ms: int


class ChatStore(SqlTables):
    """Reports and mutes. Synchronous and thread-safe; async code calls it with
    ``asyncio.to_thread``."""

    @classmethod
    def open(cls, url: str | None) -> ChatStore:
        """The store at ``url`` (None: a private in-memory SQLite database), its tables
        created or migrated."""
        if url is not None and make_url(url).get_backend_name() == "postgresql":
            from services.platform.migrations import upgrade_database

            upgrade_database(url)
            return cls(open_sql_engine(url, owner="chat"))
        return cls(open_tables(url, ChatModel.metadata, owner="chat"))

    # ---- reports ----

    def add_report(self, report: NewReport, now_ms: int) -> Report:
        """Store ``report``, made at ``now_ms``; it with its id."""
        with self._transaction() as connection:
            report_id = connection.execute(insert(REPORTS).values(
                reporter_id=report.reporter_id, reported_id=report.reported_id,
                game_id=report.game_id, table_id=report.table_id, seq=report.seq,
                category=report.category, note=report.note, created_ms=now_ms,
            )).inserted_primary_key[0]  # type: ignore[index]
        return Report(report.reporter_id, report.reported_id, report.game_id,
                      report.table_id, report.seq, report.category, report.note,
                      int(report_id), now_ms)

    def reports(self, *, after_id: int, limit: int, kept_since_ms: int,
                reported_id: str = "") -> list[Report]:
        """The reports made at ``kept_since_ms`` or later, oldest first, from the one after
        ``after_id``, at most ``limit`` (only those about ``reported_id`` when given)."""
        query = (select(REPORTS).where(REPORTS.c.report_id > after_id,
                                       REPORTS.c.created_ms >= kept_since_ms)
                 .order_by(REPORTS.c.report_id).limit(limit))
        if reported_id:
            query = query.where(REPORTS.c.reported_id == reported_id)
        with self._reading() as connection:
            return [_report_of(row) for row in connection.execute(query).all()]

    def report(self, report_id: int, *, kept_since_ms: int) -> Report | None:
        """The report ``report_id`` if it is kept."""
        with self._reading() as connection:
            row = connection.execute(select(REPORTS).where(
                REPORTS.c.report_id == report_id,
                REPORTS.c.created_ms >= kept_since_ms)).first()
        return None if row is None else _report_of(row)

    def delete_reports_before(self, oldest_kept_ms: int) -> int:
        """Delete every report made before ``oldest_kept_ms``; how many went."""
        with self._transaction() as connection:
            return int(connection.execute(
                delete(REPORTS).where(REPORTS.c.created_ms < oldest_kept_ms)).rowcount)

    # ---- mutes ----

    def set_muted(self, player_id: str, muted_id: str, muted: bool, now_ms: int) -> list[str]:
        """Mute (or unmute) ``muted_id`` for ``player_id``; everyone they have muted then."""
        with self._transaction() as connection:
            mine = (MUTES.c.player_id == player_id, MUTES.c.muted_id == muted_id)
            if not muted:
                connection.execute(delete(MUTES).where(*mine))
            elif connection.execute(select(MUTES.c.muted_id).where(*mine)).first() is None:
                try:
                    with connection.begin_nested():
                        connection.execute(insert(MUTES).values(
                            player_id=player_id, muted_id=muted_id, muted_ms=now_ms))
                except IntegrityError:
                    pass  # the same mute from another call at the same moment
        return sorted(self.muted_by(player_id))

    def muted_by(self, player_id: str) -> set[str]:
        """The players ``player_id`` has muted."""
        with self._reading() as connection:
            return set(connection.execute(
                select(MUTES.c.muted_id).where(MUTES.c.player_id == player_id)).scalars())


def _report_of(row: Any) -> Report:
    return Report(str(row.reporter_id), str(row.reported_id), str(row.game_id),
                  str(row.table_id), int(row.seq), int(row.category), str(row.note),
                  int(row.report_id), int(row.created_ms))
