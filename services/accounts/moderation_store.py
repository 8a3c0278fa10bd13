"""The moderation tables of the accounts service: the players' bans and the operators'
action log (:mod:`services.accounts.admin_log`).

At the same URL as the accounts tables, with their own metadata (every name starts with
``accounts_``): on PostgreSQL from the Alembic revision 0008, on SQLite from these models.
A ban and the log entry recording it are written in one transaction, so the log holds every
ban the table does. Each entry's seq is the last one's plus one: of two operators acting at
once, one inserts that seq first and the other's insert fails on the primary key and is
tried again after the new last entry, so the chain never forks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import BigInteger, Column, Connection, LargeBinary, String, Text, delete, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from services.accounts.admin_log import AdminAction, AdminEntry, canonical_detail, chained
from services.accounts.store import PLAYER_ID_CHARS
from services.platform.bans import BAN_REASON_CHARS, Ban
from services.platform.sql_engine import SqlTables, open_sql_engine, open_tables

ACTION_CHARS: Final = 32
SUBJECT_CHARS: Final = 256
_APPEND_ATTEMPTS: Final = 8


class ModerationModel(SQLModel, registry=registry()):
    """Base of the moderation tables."""


class BanRow(ModerationModel, table=True):
    """A player's ban, while it stands (lifting it deletes the row; the log keeps it)."""

    __tablename__ = "accounts_bans"

    player_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), primary_key=True))
    until_ms: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    """None: until an operator lifts it."""
    reason: str = Field(sa_column=Column(String(BAN_REASON_CHARS), nullable=False))
    banned_by: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    banned_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class AdminActionRow(ModerationModel, table=True):
    """One entry of the operators' action log."""

    __tablename__ = "accounts_admin_actions"

    seq: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    at_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    actor: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    action: str = Field(sa_column=Column(String(ACTION_CHARS), nullable=False))
    subject: str = Field(sa_column=Column(String(SUBJECT_CHARS), nullable=False))
    detail: str = Field(sa_column=Column(Text, nullable=False))
    """The action's detail as canonical JSON."""
    prev_hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class ErasureRow(ModerationModel, table=True):
    """A deleted account: its player id only, so that every service learns of it and the id
    is never a player's again."""

    __tablename__ = "accounts_erasures"

    player_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), primary_key=True))
    erased_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


BANS = BanRow.__table__  # type: ignore[attr-defined]
ACTIONS = AdminActionRow.__table__  # type: ignore[attr-defined]
ERASURES = ErasureRow.__table__  # type: ignore[attr-defined]
TABLES: Final = (BANS, ACTIONS, ERASURES)


@dataclass(frozen=True, slots=True)
class BanRecord:
    """A standing ban, who decided it and when."""

    player_id: str
    ban: Ban
    banned_by: str
    banned_ms: int


def _entry_of(row: Any) -> AdminEntry:
    return AdminEntry(row.seq, row.at_ms, row.actor, row.action, row.subject,
                      json.loads(row.detail), row.prev_hash, row.hash)


def _record_of(row: Any) -> BanRecord:
    return BanRecord(row.player_id, Ban(row.until_ms, row.reason), row.banned_by,
                     row.banned_ms)


class ModerationStore(SqlTables):
    """The moderation tables. Synchronous and thread-safe; async code calls it with
    ``asyncio.to_thread``."""

    @classmethod
    def open(cls, url: str | None) -> ModerationStore:
        """The store at ``url`` (None: a private in-memory SQLite database), its tables
        created or migrated."""
        if url is not None and make_url(url).get_backend_name() == "postgresql":
            from services.platform.migrations import upgrade_database

            upgrade_database(url)
            return cls(open_sql_engine(url, owner="moderation"))
        return cls(open_tables(url, ModerationModel.metadata, owner="moderation"))

    # ---- the log ----

    def record(self, actor: str, action: str, subject: str, detail: Mapping[str, Any],
               now_ms: int) -> AdminEntry:
        """Append an entry of an action that changes nothing here (a search)."""
        return self._with_entry(actor, action, subject, detail, now_ms, lambda _: None)

    def actions(self, after_seq: int, limit: int) -> list[AdminEntry]:
        """Up to ``limit`` entries after ``after_seq``, in order."""
        with self._reading() as connection:
            rows = connection.execute(
                select(ACTIONS).where(ACTIONS.c.seq > after_seq)
                .order_by(ACTIONS.c.seq).limit(limit)).all()
        return [_entry_of(row) for row in rows]

    def _with_entry(self, actor: str, action: str, subject: str, detail: Mapping[str, Any],
                    now_ms: int, change: Any) -> AdminEntry:
        """Run ``change(connection)`` and append its entry in one transaction."""
        for attempt in range(_APPEND_ATTEMPTS):
            try:
                with self._transaction() as connection:
                    change(connection)
                    return self._append(connection, actor, action, subject, detail, now_ms)
            except IntegrityError:
                if attempt == _APPEND_ATTEMPTS - 1:
                    raise  # another writer won every time: the caller's call fails, retryable
        raise AssertionError("unreachable")

    @staticmethod
    def _append(connection: Connection, actor: str, action: str, subject: str,
                detail: Mapping[str, Any], now_ms: int) -> AdminEntry:
        last = connection.execute(
            select(ACTIONS).order_by(ACTIONS.c.seq.desc()).limit(1)).first()
        entry = chained(None if last is None else _entry_of(last), at_ms=now_ms, actor=actor,
                        action=action, subject=subject[:SUBJECT_CHARS], detail=detail)
        connection.execute(ACTIONS.insert().values(
            seq=entry.seq, at_ms=entry.at_ms, actor=entry.actor, action=entry.action,
            subject=entry.subject, detail=canonical_detail(entry.detail),
            prev_hash=entry.prev_hash, hash=entry.hash))
        return entry

    # ---- bans ----

    def ban(self, player_id: str, ban: Ban, actor: str, now_ms: int) -> AdminEntry:
        """Ban ``player_id`` (replacing a ban they have), recorded in the log."""

        def write(connection: Connection) -> None:
            connection.execute(delete(BANS).where(BANS.c.player_id == player_id))
            connection.execute(BANS.insert().values(
                player_id=player_id, until_ms=ban.until_ms, reason=ban.reason,
                banned_by=actor, banned_ms=now_ms))

        return self._with_entry(actor, AdminAction.BAN, player_id,
                                {"until_ms": ban.until_ms, "reason": ban.reason}, now_ms, write)

    def lift(self, player_id: str, actor: str, note: str, now_ms: int
             ) -> tuple[bool, AdminEntry]:
        """Lift ``player_id``'s ban; whether they had one, and the log's entry."""
        lifted: list[bool] = []

        def write(connection: Connection) -> None:
            lifted.append(bool(connection.execute(
                delete(BANS).where(BANS.c.player_id == player_id)).rowcount))

        entry = self._with_entry(actor, AdminAction.LIFT_BAN, player_id,
                                 {"note": note}, now_ms, write)
        return lifted[-1], entry

    # ---- erasures ----

    def erase(self, player_id: str, now_ms: int, *, actor: str | None) -> AdminEntry | None:
        """Record that ``player_id``'s account is deleted (their ban, if any, goes with it);
        by an operator (``actor``) with an entry in the log, else by the player."""

        def write(connection: Connection) -> None:
            connection.execute(delete(BANS).where(BANS.c.player_id == player_id))
            if connection.execute(select(ERASURES.c.player_id)
                                  .where(ERASURES.c.player_id == player_id)).first() is None:
                connection.execute(ERASURES.insert().values(player_id=player_id,
                                                            erased_ms=now_ms))

        if actor is None:
            with self._transaction() as connection:
                write(connection)
            return None
        return self._with_entry(actor, AdminAction.ERASE, player_id, {}, now_ms, write)

    def is_erased(self, player_id: str) -> bool:
        """Whether ``player_id``'s account was deleted."""
        with self._reading() as connection:
            return connection.execute(select(ERASURES.c.player_id)
                                      .where(ERASURES.c.player_id == player_id)
                                      ).first() is not None

    def erased_since(self, since_ms: int) -> list[str]:
        """The accounts deleted at or after ``since_ms``."""
        with self._reading() as connection:
            return list(connection.execute(select(ERASURES.c.player_id)
                                           .where(ERASURES.c.erased_ms >= since_ms)).scalars())

    def ban_of(self, player_id: str, now_ms: int) -> BanRecord | None:
        """``player_id``'s ban in force at ``now_ms``, or None."""
        found = self.bans_of([player_id], now_ms)
        return found.get(player_id)

    def bans_of(self, player_ids: Iterable[str], now_ms: int) -> dict[str, BanRecord]:
        """The bans in force at ``now_ms`` of those of ``player_ids`` who have one."""
        ids = list(player_ids)
        if not ids:
            return {}
        with self._reading() as connection:
            rows = connection.execute(select(BANS).where(BANS.c.player_id.in_(ids))).all()
        return {row.player_id: _record_of(row) for row in rows
                if Ban(row.until_ms, row.reason).in_force(now_ms)}

    def standing_bans(self, now_ms: int) -> dict[str, Ban]:
        """Every ban in force at ``now_ms``, by player; the rows of bans that are over are
        deleted (the log keeps them)."""
        with self._transaction() as connection:
            connection.execute(delete(BANS).where(BANS.c.until_ms.is_not(None),
                                                  BANS.c.until_ms <= now_ms))
            rows = connection.execute(select(BANS)).all()
        return {row.player_id: Ban(row.until_ms, row.reason) for row in rows}
