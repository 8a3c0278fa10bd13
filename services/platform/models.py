"""The SQL tables of the event store (SQLModel), shared by SQLite and PostgreSQL.

``games`` holds one row per game: its type, the head of its log (``last_seq``,
``last_hash``) and the relay's outbox watermark (``relayed_seq``: every event with a
greater seq still has to reach the bus; ``relay_lease_until_ms``: a replica's claim on
relaying this game, so that one game's events leave in seq order from one relay at a time;
0 once a claim ended cleanly, so any other past value marks a claim that ended unfinished)
and ``spectators_allowed``: whether players without a seat may watch the match (the game
service's own copy of the setting it was created with; games stored before it: true).
``events`` is the log itself, keyed by ``(game_id, seq)``: that primary key is the
optimistic-concurrency check. ``commands`` remembers which seqs a sender's ``command_id``
produced, keyed by ``(game_id, sender, command_id)``, so that a retried command appends
nothing and nobody can take another sender's id. ``game_seat_names`` holds the display name
of each seat of a game, keyed by ``(game_id, seat)``: names never enter the signed log (an
account's erasure blanks them here, and a signed log cannot change), so the game service
keeps them beside it and puts them into what it serves. The Alembic migrations in
``services/platform/migrations/versions`` create the same tables (SQLite files made before
a migration are brought up to date by :mod:`services.platform.store_sql`); keep them in step.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    false,
    text,
    true,
)
from sqlmodel import Field, SQLModel

GAME_ID_LENGTH = 64
COMMAND_ID_LENGTH = 128
SENDER_LENGTH = 160
"""Longest ``commands.sender``; callers shorten longer names (e.g. to a digest)."""


class GameRow(SQLModel, table=True):
    """One game: its type, the head of its log and the relay watermark."""

    __tablename__ = "games"
    __table_args__ = (
        # The relay asks "which games have unrelayed events?" constantly: keep it an index scan.
        Index(
            "ix_games_unrelayed",
            "game_id",
            postgresql_where=text("relayed_seq < last_seq"),
            sqlite_where=text("relayed_seq < last_seq"),
        ),
    )

    game_id: str = Field(sa_column=Column(String(GAME_ID_LENGTH), primary_key=True))
    game_type: int = Field(nullable=False)
    last_seq: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    last_hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    relayed_seq: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    relay_lease_until_ms: int = Field(sa_column=Column(BigInteger, nullable=False, default=0))
    spectators_allowed: bool = Field(
        sa_column=Column(Boolean, nullable=False, server_default=true())
    )


class EventRow(SQLModel, table=True):
    """One stored event: the serialized ``dast.v1.Event`` and its chain hash."""

    __tablename__ = "events"

    game_id: str = Field(sa_column=Column(String(GAME_ID_LENGTH), primary_key=True))
    seq: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    game_type: int = Field(nullable=False)
    event: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    command_id: str | None = Field(
        default=None, sa_column=Column(String(COMMAND_ID_LENGTH), nullable=True)
    )
    at_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class CommandRow(SQLModel, table=True):
    """The seqs a command produced, so that the same sender's retry of its ``command_id`` is
    a no-op (rows written before senders were recorded have sender ``""``)."""

    __tablename__ = "commands"

    game_id: str = Field(sa_column=Column(String(GAME_ID_LENGTH), primary_key=True))
    sender: str = Field(sa_column=Column(String(SENDER_LENGTH), primary_key=True))
    command_id: str = Field(sa_column=Column(String(COMMAND_ID_LENGTH), primary_key=True))
    first_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    last_seq: int = Field(sa_column=Column(BigInteger, nullable=False))


class SeatNameRow(SQLModel, table=True):
    """The display name of one seat of a game, kept beside its log (never in it), with the
    seat's player id so that an account's erasure finds its names (``deleted``: blanked so)."""

    __tablename__ = "game_seat_names"
    __table_args__ = (Index("ix_game_seat_names_player", "player_id"),)

    game_id: str = Field(sa_column=Column(String(GAME_ID_LENGTH), primary_key=True))
    seat: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    """The player's index in the game's ``players`` as created (its log's order)."""
    player_id: str = Field(sa_column=Column(Text, nullable=False))
    display_name: str = Field(sa_column=Column(Text, nullable=False))
    deleted: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=false()))
