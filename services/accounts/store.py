"""The accounts service's tables in SQL (SQLModel): players and their profiles, devices,
sessions, refresh tokens, linked identities.

SQLite is the embedded default and PostgreSQL the production store, at the same URL as the
other services' tables (``Settings.store_url()``); every table's name starts with
``accounts_``. On PostgreSQL the tables come from the Alembic revisions 0005 to 0009
(``services/platform/migrations/versions``, run by :meth:`AccountsStore.open`); on SQLite
from these models (``create_all``), a file of an older version gaining the columns added
since (each has a server default, which its old rows take). Keep the two in step
(``tests/services/platform/test_migrations.py`` compares them).

Secrets are never stored, only their SHA-256 digests: a device secret and a refresh token
are 32 random bytes each, far too many to guess, so a fast digest is enough (a password would
need a slow one), and lookups by digest compare nothing secret in Python. A device's secret
is checked with :func:`hmac.compare_digest` all the same.

A refresh token is spent by an ``UPDATE … WHERE spent_ms = 0``: of two calls spending the
same token at once, exactly one wins; the other sees it spent, as a reuse.

An identity (a provider's name and its ``sub``) is the primary key of its row, so it belongs
to one player whoever links it first; a player has at most one of each provider (a unique
index). Linking and unlinking lock the player's row first (``SELECT … FOR UPDATE`` on
PostgreSQL; SQLite's writers queue anyway), so two unlinks at once cannot both see another
way in and leave the player none.

Errors::

    AccountsStoreError
     ├── DeviceSecretMismatch   a known device without its secret
     ├── GuestAlreadyMoved      a lobby guest's player id that is here already
     ├── RefreshRefused         a refresh token that cannot be spent (``reused`` says why)
     ├── IdentityLinkedElsewhere  an identity of another player
     ├── ProviderAlreadyLinked  a second identity of one provider for a player
     ├── IdentityNotLinked      unlinking an identity the player lacks
     ├── LastWayIn              unlinking the player's last identity, with no device
     └── AccountNotFound        a profile of a player id not stored here
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Index,
    LargeBinary,
    String,
    Table,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import registry
from sqlalchemy.schema import CreateColumn
from sqlmodel import Field, SQLModel

from services.platform.sql_engine import SqlTables, open_sql_engine, open_tables
from services.platform.validation import quoted_input

PLAYER_ID_CHARS: Final = 64
DEVICE_ID_CHARS: Final = 128
SESSION_ID_CHARS: Final = 32
DIGEST_BYTES: Final = 32
PROVIDER_CHARS: Final = 32
SUBJECT_CHARS: Final = 255
EMAIL_CHARS: Final = 320
DISPLAY_NAME_CHARS: Final = 64
AVATAR_ID_CHARS: Final = 64
LOCALE_CHARS: Final = 16


class AccountsModel(SQLModel, registry=registry()):
    """Base of the accounts tables: their own metadata, apart from every other service's."""


class PlayerRow(AccountsModel, table=True):
    """A player: the identity every device and session of theirs leads to, and their
    profile.

    A column added after the table first shipped needs a ``server_default`` (the value the
    rows stored before take, on PostgreSQL by its Alembic revision, on SQLite by
    :func:`_add_missing_columns`).
    """

    __tablename__ = "accounts_players"

    player_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), primary_key=True))
    display_name: str = Field(sa_column=Column(String(DISPLAY_NAME_CHARS), nullable=False))
    created_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    avatar_id: str = Field(sa_column=Column(String(AVATAR_ID_CHARS), nullable=False,
                                            server_default=""))
    """The app's picture for the player ("" when none is chosen; revision 0007)."""
    locale: str = Field(sa_column=Column(String(LOCALE_CHARS), nullable=False,
                                         server_default=""))
    """A BCP 47 tag ("" when none is chosen; revision 0007)."""
    last_sign_in_ms: int = Field(sa_column=Column(BigInteger, nullable=False,
                                                  server_default="0"))
    """When the player last signed in or refreshed a session (revision 0009); 0 for a
    player who has not since the column exists, whose idle time
    :meth:`AccountsStore.idle_guests` counts from its first look."""


class DeviceRow(AccountsModel, table=True):
    """A device a player signs in from as a guest, with the digest of its secret."""

    __tablename__ = "accounts_devices"
    __table_args__ = (Index("ix_accounts_devices_player", "player_id"),)

    device_id: str = Field(sa_column=Column(String(DEVICE_ID_CHARS), primary_key=True))
    player_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    secret_digest: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


class SessionRow(AccountsModel, table=True):
    """A session: one sign-in and every refresh after it (a family of refresh tokens)."""

    __tablename__ = "accounts_sessions"
    __table_args__ = (Index("ix_accounts_sessions_player", "player_id"),)

    session_id: str = Field(sa_column=Column(String(SESSION_ID_CHARS), primary_key=True))
    player_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    created_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    ended_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    """0 while the session is open; when it ended otherwise."""


class RefreshTokenRow(AccountsModel, table=True):
    """A refresh token of a session, by digest: live until it expires or is spent."""

    __tablename__ = "accounts_refresh_tokens"
    __table_args__ = (Index("ix_accounts_refresh_tokens_session", "session_id"),)

    token_digest: bytes = Field(sa_column=Column(LargeBinary, primary_key=True))
    session_id: str = Field(sa_column=Column(String(SESSION_ID_CHARS), nullable=False))
    expires_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    spent_ms: int = Field(sa_column=Column(BigInteger, nullable=False))
    """0 until the token is spent."""


class IdentityRow(AccountsModel, table=True):
    """An identity of an identity provider (its name and the person's ``sub`` there), linked
    to the player it signs in."""

    __tablename__ = "accounts_identities"
    __table_args__ = (
        Index("ix_accounts_identities_player_provider", "player_id", "provider", unique=True),
    )

    provider: str = Field(sa_column=Column(String(PROVIDER_CHARS), primary_key=True))
    subject: str = Field(sa_column=Column(String(SUBJECT_CHARS), primary_key=True))
    player_id: str = Field(sa_column=Column(String(PLAYER_ID_CHARS), nullable=False))
    email: str = Field(sa_column=Column(String(EMAIL_CHARS), nullable=False))
    """The address the provider gave when the identity was linked ("" when none)."""
    linked_ms: int = Field(sa_column=Column(BigInteger, nullable=False))


PLAYERS = PlayerRow.__table__  # type: ignore[attr-defined]
DEVICES = DeviceRow.__table__  # type: ignore[attr-defined]
SESSIONS = SessionRow.__table__  # type: ignore[attr-defined]
REFRESH_TOKENS = RefreshTokenRow.__table__  # type: ignore[attr-defined]
IDENTITIES = IdentityRow.__table__  # type: ignore[attr-defined]
TABLES: Final = (PLAYERS, DEVICES, SESSIONS, REFRESH_TOKENS, IDENTITIES)


def digest(secret: str) -> bytes:
    """The SHA-256 digest a secret (device secret, refresh token) is stored as."""
    return hashlib.sha256(secret.encode("utf-8", errors="surrogatepass")).digest()


class AccountsStoreError(Exception):
    """Base of the accounts store's errors."""


class DeviceSecretMismatch(AccountsStoreError):
    """The device signed in before, and the secret given is not its secret."""


class GuestAlreadyMoved(AccountsStoreError):
    """A lobby guest's player id offered for a new device, and that player exists here."""


class RefreshRefused(AccountsStoreError):
    """A refresh token that cannot be spent.

    :param reused: True when it was spent already (its session is ended now); False when
        it is unknown, expired, or of an ended session.
    :param ended_session: the session the refusal ended (a reuse), else None.
    """

    def __init__(self, message: str, *, reused: bool, ended_session: str | None = None) -> None:
        super().__init__(message)
        self.reused = reused
        self.ended_session = ended_session


class IdentityLinkedElsewhere(AccountsStoreError):
    """The identity is linked to another player."""


class ProviderAlreadyLinked(AccountsStoreError):
    """The player has another identity of the provider linked."""


class IdentityNotLinked(AccountsStoreError):
    """The player has no such identity linked."""


class LastWayIn(AccountsStoreError):
    """The identity is the player's last way in (no other identity, no device)."""


class AccountNotFound(AccountsStoreError):
    """No player of that id is stored here."""


@dataclass(frozen=True, slots=True)
class GuestSignIn:
    """What a guest sign-in found or made."""

    player_id: str
    display_name: str
    is_new: bool


@dataclass(frozen=True, slots=True)
class Identity:
    """An identity linked to a player."""

    provider: str
    subject: str
    player_id: str
    email: str
    linked_ms: int


@dataclass(frozen=True, slots=True)
class FoundPlayer:
    """A player an operator's search found."""

    player_id: str
    display_name: str
    created_ms: int
    providers: tuple[str, ...]
    """The providers of their linked identities."""
    devices: int


@dataclass(frozen=True, slots=True)
class Profile:
    """A player's profile as stored."""

    player_id: str
    display_name: str
    avatar_id: str
    locale: str
    created_ms: int


@dataclass(frozen=True, slots=True)
class ProfileChange:
    """New values for a profile's fields; a field left None keeps its value."""

    display_name: str | None = None
    avatar_id: str | None = None
    locale: str | None = None

    def values(self) -> dict[str, str]:
        """The columns to change and their new values."""
        return {name: value for name, value in (
            ("display_name", self.display_name), ("avatar_id", self.avatar_id),
            ("locale", self.locale)) if value is not None}


@dataclass(frozen=True, slots=True)
class NewSession:
    """An opened session and its first refresh token's digest."""

    session_id: str
    player_id: str
    refresh_digest: bytes
    refresh_expires_ms: int


class AccountsStore(SqlTables):
    """The accounts tables. Synchronous and thread-safe; async code calls it with
    ``asyncio.to_thread``."""

    @classmethod
    def open(cls, url: str | None) -> AccountsStore:
        """The store at ``url`` (None: a private in-memory SQLite database), its tables
        created or migrated.

        :raises ValueError: for a URL of another database than SQLite or PostgreSQL.
        """
        if url is not None and make_url(url).get_backend_name() == "postgresql":
            from services.platform.migrations import upgrade_database

            upgrade_database(url)
            return cls(open_sql_engine(url, owner="accounts"))
        engine = open_tables(url, AccountsModel.metadata, owner="accounts")
        _add_missing_columns(engine)
        return cls(engine)

    def sign_in_guest(self, device_id: str, secret_digest: bytes, display_name: str,
                      new_player_id: str, now_ms: int, *, check: str | None) -> GuestSignIn:
        """The player of ``device_id``: a new one (``new_player_id``, ``display_name``,
        the device stored with ``secret_digest``) on the device's first sign-in; otherwise
        the device's, when ``check`` is its secret.

        :raises DeviceSecretMismatch: for a known device and another (or no) secret.
        """
        found = self._device(device_id)
        if found is None:
            try:
                self._insert_player(new_player_id, display_name, now_ms, DEVICES,
                                    device_id=device_id, secret_digest=secret_digest,
                                    created_ms=now_ms)
                return GuestSignIn(new_player_id, display_name, True)
            except IntegrityError:
                # Another call stored the device first (a known device now), or the player
                # exists: a lobby guest moved over from another device already.
                found = self._device(device_id)
            if found is None:
                raise GuestAlreadyMoved(
                    "this guest has moved to the accounts service already, from another "
                    "device id: sign in from that one")
        player_id, stored = found
        if check is None or not hmac.compare_digest(digest(check), stored):
            raise DeviceSecretMismatch(
                "this device signed in before: send the device secret its first sign-in "
                "returned")
        return GuestSignIn(player_id, self._name_of(player_id), False)

    def _insert_player(self, player_id: str, display_name: str, now_ms: int, way_in: Table,
                       **row: object) -> None:
        """A new player and its first way in (a row of ``way_in``: a device or an identity)
        in one transaction.

        :raises IntegrityError: when the player or the way in exists already.
        """
        with self._transaction() as connection:
            connection.execute(insert(PLAYERS).values(
                player_id=player_id, display_name=display_name, created_ms=now_ms,
                last_sign_in_ms=now_ms))
            connection.execute(insert(way_in).values(player_id=player_id, **row))

    def _device(self, device_id: str) -> tuple[str, bytes] | None:
        with self._reading() as connection:
            row = connection.execute(
                select(DEVICES.c.player_id, DEVICES.c.secret_digest)
                .where(DEVICES.c.device_id == device_id)
            ).first()
        return None if row is None else (row[0], bytes(row[1]))

    def _name_of(self, player_id: str) -> str:
        with self._reading() as connection:
            name = connection.execute(
                select(PLAYERS.c.display_name).where(PLAYERS.c.player_id == player_id)
            ).scalar_one_or_none()
        return name or ""

    def open_session(self, session_id: str, player_id: str, refresh_digest: bytes,
                     now_ms: int, refresh_expires_ms: int) -> NewSession:
        """Open the session ``session_id`` of ``player_id`` with its first refresh token."""
        with self._transaction() as connection:
            connection.execute(insert(SESSIONS).values(
                session_id=session_id, player_id=player_id, created_ms=now_ms, ended_ms=0))
            connection.execute(insert(REFRESH_TOKENS).values(
                token_digest=refresh_digest, session_id=session_id,
                expires_ms=refresh_expires_ms, spent_ms=0))
            _signed_in(connection, player_id, now_ms)
        return NewSession(session_id, player_id, refresh_digest, refresh_expires_ms)

    def rotate(self, spent_digest: bytes, next_digest: bytes, now_ms: int,
               next_expires_ms: int) -> NewSession:
        """Spend the refresh token ``spent_digest`` and give its session the token
        ``next_digest``.

        :raises RefreshRefused: for a token that is unknown, expired or of an ended session
            (``reused`` False), or spent already (``reused`` True: the session is ended now,
            every token of it with it).
        """
        with self._transaction() as connection:
            found = connection.execute(
                select(REFRESH_TOKENS.c.session_id, REFRESH_TOKENS.c.expires_ms,
                       SESSIONS.c.player_id, SESSIONS.c.ended_ms)
                .join(SESSIONS, SESSIONS.c.session_id == REFRESH_TOKENS.c.session_id)
                .where(REFRESH_TOKENS.c.token_digest == spent_digest)
            ).first()
            if found is None:
                raise RefreshRefused("the refresh token is not known: sign in again",
                                     reused=False)
            session_id, expires_ms, player_id, ended_ms = found
            if ended_ms:
                raise RefreshRefused("the refresh token's session has ended: sign in again",
                                     reused=False)
            if expires_ms <= now_ms:
                raise RefreshRefused("the refresh token has expired: sign in again",
                                     reused=False)
            spent = connection.execute(
                update(REFRESH_TOKENS)
                .where(REFRESH_TOKENS.c.token_digest == spent_digest,
                       REFRESH_TOKENS.c.spent_ms == 0)
                .values(spent_ms=now_ms)
            ).rowcount
            if spent == 1:
                connection.execute(insert(REFRESH_TOKENS).values(
                    token_digest=next_digest, session_id=session_id,
                    expires_ms=next_expires_ms, spent_ms=0))
                _signed_in(connection, player_id, now_ms)
                return NewSession(session_id, player_id, next_digest, next_expires_ms)
            connection.execute(
                update(SESSIONS).where(SESSIONS.c.session_id == session_id)
                .values(ended_ms=now_ms))
        raise RefreshRefused(
            "the refresh token was used already, so its session is ended: sign in again",
            reused=True, ended_session=session_id)

    def end_session(self, session_id: str, player_id: str, now_ms: int) -> bool:
        """End ``player_id``'s session ``session_id``; whether it was open."""
        with self._transaction() as connection:
            return bool(connection.execute(
                update(SESSIONS)
                .where(SESSIONS.c.session_id == session_id, SESSIONS.c.player_id == player_id,
                       SESSIONS.c.ended_ms == 0)
                .values(ended_ms=now_ms)
            ).rowcount)

    def end_sessions_of(self, player_id: str, now_ms: int) -> list[str]:
        """End every open session of ``player_id``; the ids of those that were open."""
        with self._transaction() as connection:
            open_ids = list(connection.execute(
                select(SESSIONS.c.session_id)
                .where(SESSIONS.c.player_id == player_id, SESSIONS.c.ended_ms == 0)
            ).scalars())
            if open_ids:
                connection.execute(
                    update(SESSIONS)
                    .where(SESSIONS.c.session_id.in_(open_ids), SESSIONS.c.ended_ms == 0)
                    .values(ended_ms=now_ms))
        return open_ids

    def is_session_open(self, session_id: str) -> bool:
        """Whether ``session_id`` names a session that has not ended."""
        with self._reading() as connection:
            ended = connection.execute(
                select(SESSIONS.c.ended_ms).where(SESSIONS.c.session_id == session_id)
            ).scalar_one_or_none()
        return ended == 0

    # ---- profiles ----

    def profile(self, player_id: str) -> Profile:
        """``player_id``'s profile.

        :raises AccountNotFound: no such player is stored here.
        """
        with self._reading() as connection:
            row = connection.execute(
                select(PLAYERS).where(PLAYERS.c.player_id == player_id)).first()
        if row is None:
            raise _account_not_found(player_id)
        return _profile_of(row)

    def update_profile(self, player_id: str, change: ProfileChange) -> Profile:
        """Change the fields of ``player_id``'s profile that ``change`` sets; the profile
        as it is then.

        :raises AccountNotFound: no such player is stored here.
        """
        with self._transaction() as connection:
            values = change.values()
            if values:
                connection.execute(update(PLAYERS).where(PLAYERS.c.player_id == player_id)
                                   .values(**values))
            row = connection.execute(
                select(PLAYERS).where(PLAYERS.c.player_id == player_id)).first()
        if row is None:
            raise _account_not_found(player_id)
        return _profile_of(row)

    # ---- identities ----

    def sign_in_identity(self, provider: str, subject: str, email: str, new_player_id: str,
                         display_name: str, now_ms: int) -> GuestSignIn:
        """The player ``provider``'s ``subject`` is linked to; on its first sign-in a new
        player (``new_player_id``, ``display_name``) with the identity linked."""
        found = self._identity(provider, subject)
        if found is None:
            try:
                self._insert_player(new_player_id, display_name, now_ms, IDENTITIES,
                                    provider=provider, subject=subject, email=email,
                                    linked_ms=now_ms)
                return GuestSignIn(new_player_id, display_name, True)
            except IntegrityError:
                # A sign-in at the same time linked it first (or, once in 2^32 players, the
                # random player id was taken: then this fails and the app retries).
                found = self._identity(provider, subject)
                if found is None:
                    raise
        return GuestSignIn(found.player_id, self._name_of(found.player_id), False)

    def link_identity(self, player_id: str, provider: str, subject: str, email: str,
                      now_ms: int) -> Identity:
        """Link ``provider``'s ``subject`` to ``player_id`` (linked already: the link as it
        is).

        :raises IdentityLinkedElsewhere: the identity is another player's.
        :raises ProviderAlreadyLinked: the player has another identity of ``provider``.
        """
        with self._transaction() as connection:
            self._lock_player(connection, player_id)
            row = connection.execute(
                select(IDENTITIES).where(IDENTITIES.c.provider == provider,
                                         IDENTITIES.c.subject == subject)).first()
            if row is not None:
                if row.player_id != player_id:
                    raise IdentityLinkedElsewhere(
                        f"this {provider} identity signs in another player: sign in with it "
                        "to reach that player, or unlink it there first")
                return _identity_of(row)
            other = connection.execute(
                select(IDENTITIES.c.subject).where(IDENTITIES.c.player_id == player_id,
                                                   IDENTITIES.c.provider == provider)).first()
            if other is not None:
                raise ProviderAlreadyLinked(
                    f"this player has another {provider} identity linked: unlink it first")
            linked = Identity(provider, subject, player_id, email, now_ms)
            connection.execute(insert(IDENTITIES).values(
                provider=provider, subject=subject, player_id=player_id, email=email,
                linked_ms=now_ms))
        return linked

    def unlink_identity(self, player_id: str, provider: str, subject: str) -> None:
        """Remove ``provider``'s ``subject`` from ``player_id``.

        :raises IdentityNotLinked: the player has no such identity.
        :raises LastWayIn: it is the player's only identity and no device signs them in.
        """
        with self._transaction() as connection:
            self._lock_player(connection, player_id)
            mine = (IDENTITIES.c.provider == provider, IDENTITIES.c.subject == subject,
                    IDENTITIES.c.player_id == player_id)
            if connection.execute(select(IDENTITIES.c.subject).where(*mine)).first() is None:
                raise IdentityNotLinked(f"this player has no such {provider} identity linked")
            identities = connection.execute(
                select(func.count()).select_from(IDENTITIES)
                .where(IDENTITIES.c.player_id == player_id)).scalar_one()
            devices = connection.execute(
                select(func.count()).select_from(DEVICES)
                .where(DEVICES.c.player_id == player_id)).scalar_one()
            if identities + devices <= 1:
                raise LastWayIn(
                    "this identity is the player's last way in (no other identity, no "
                    "device): link another identity first")
            connection.execute(delete(IDENTITIES).where(*mine))

    def identities_of(self, player_id: str) -> tuple[list[Identity], int]:
        """The identities linked to ``player_id`` (oldest first) and how many devices sign
        the player in."""
        with self._reading() as connection:
            rows = connection.execute(
                select(IDENTITIES).where(IDENTITIES.c.player_id == player_id)
                .order_by(IDENTITIES.c.linked_ms, IDENTITIES.c.provider)).all()
            devices = connection.execute(
                select(func.count()).select_from(DEVICES)
                .where(DEVICES.c.player_id == player_id)).scalar_one()
        return [_identity_of(row) for row in rows], int(devices)

    # ---- operators ----

    def find_players(self, query: str, limit: int) -> list[FoundPlayer]:
        """Players whose id is ``query``, then those whose display name holds it (any case),
        newest first; at most ``limit``."""
        pattern = "%" + query.lower().replace("\\", "\\\\").replace("%", "\\%").replace(
            "_", "\\_") + "%"
        with self._reading() as connection:
            rows = list(connection.execute(
                select(PLAYERS).where(PLAYERS.c.player_id == query)).all())
            rows += connection.execute(
                select(PLAYERS).where(func.lower(PLAYERS.c.display_name).like(pattern,
                                                                            escape="\\"),
                                      PLAYERS.c.player_id != query)
                .order_by(PLAYERS.c.created_ms.desc(), PLAYERS.c.player_id)
                .limit(limit)).all()
            rows = rows[:limit]
            ids = [row.player_id for row in rows]
            providers: dict[str, list[str]] = {}
            for row in connection.execute(
                    select(IDENTITIES.c.player_id, IDENTITIES.c.provider)
                    .where(IDENTITIES.c.player_id.in_(ids))
                    .order_by(IDENTITIES.c.provider)).all():
                providers.setdefault(row.player_id, []).append(row.provider)
            devices: dict[str, int] = {
                row[0]: int(row[1]) for row in connection.execute(
                    select(DEVICES.c.player_id, func.count())
                    .where(DEVICES.c.player_id.in_(ids)).group_by(DEVICES.c.player_id)).all()}
        return [FoundPlayer(row.player_id, row.display_name, row.created_ms,
                            tuple(providers.get(row.player_id, ())),
                            int(devices.get(row.player_id, 0))) for row in rows]

    def erase_player(self, player_id: str) -> bool:
        """Delete everything this store holds of ``player_id``: their row (and name), devices,
        identities, sessions and refresh tokens; whether they were here. Doing it again
        changes nothing."""
        with self._transaction() as connection:
            sessions = select(SESSIONS.c.session_id).where(SESSIONS.c.player_id == player_id)
            connection.execute(delete(REFRESH_TOKENS)
                               .where(REFRESH_TOKENS.c.session_id.in_(sessions)))
            connection.execute(delete(SESSIONS).where(SESSIONS.c.player_id == player_id))
            connection.execute(delete(IDENTITIES).where(IDENTITIES.c.player_id == player_id))
            connection.execute(delete(DEVICES).where(DEVICES.c.player_id == player_id))
            return bool(connection.execute(
                delete(PLAYERS).where(PLAYERS.c.player_id == player_id)).rowcount)

    def idle_guests(self, signed_in_before_ms: int, now_ms: int, limit: int) -> list[str]:
        """Guests (players with no identity linked) whose last sign-in was before
        ``signed_in_before_ms``, at most ``limit``, longest idle first.

        A player with no sign-in time (stored before revision 0009) gets ``now_ms`` first:
        their idle time starts when the deployment first looks, not at the epoch.
        """
        with self._transaction() as connection:
            connection.execute(update(PLAYERS).where(PLAYERS.c.last_sign_in_ms == 0)
                               .values(last_sign_in_ms=now_ms))
            linked = select(IDENTITIES.c.player_id).where(
                IDENTITIES.c.player_id == PLAYERS.c.player_id)
            return list(connection.execute(
                # (0: a player inserted since the update above, by an older replica: not idle)
                select(PLAYERS.c.player_id)
                .where(PLAYERS.c.last_sign_in_ms < signed_in_before_ms,
                       PLAYERS.c.last_sign_in_ms > 0, ~linked.exists())
                .order_by(PLAYERS.c.last_sign_in_ms, PLAYERS.c.player_id).limit(limit)
            ).scalars())

    def token_facts(self, player_id: str) -> tuple[bool, str]:
        """What ``player_id``'s access tokens say of them: whether they have an identity
        provider's identity linked, and their display name ("" when not here)."""
        with self._reading() as connection:
            linked = connection.execute(
                select(IDENTITIES.c.provider).where(IDENTITIES.c.player_id == player_id)
                .limit(1)).first() is not None
            name = connection.execute(select(PLAYERS.c.display_name)
                                      .where(PLAYERS.c.player_id == player_id)).scalar()
        return linked, str(name or "")

    def has_player(self, player_id: str) -> bool:
        """Whether ``player_id`` is a player of this store."""
        with self._reading() as connection:
            return connection.execute(
                select(PLAYERS.c.player_id).where(PLAYERS.c.player_id == player_id)
            ).first() is not None

    def _identity(self, provider: str, subject: str) -> Identity | None:
        with self._reading() as connection:
            row = connection.execute(
                select(IDENTITIES).where(IDENTITIES.c.provider == provider,
                                         IDENTITIES.c.subject == subject)).first()
        return None if row is None else _identity_of(row)

    @staticmethod
    def _lock_player(connection: Connection, player_id: str) -> None:
        """Hold ``player_id``'s row until the transaction ends (PostgreSQL; SQLite's
        ``BEGIN IMMEDIATE`` holds the whole database already)."""
        connection.execute(select(PLAYERS.c.player_id)
                           .where(PLAYERS.c.player_id == player_id).with_for_update())


def _signed_in(connection: Connection, player_id: str, now_ms: int) -> None:
    connection.execute(update(PLAYERS).where(PLAYERS.c.player_id == player_id)
                       .values(last_sign_in_ms=now_ms))


def _account_not_found(player_id: str) -> AccountNotFound:
    return AccountNotFound(f"no player {quoted_input(player_id)} has signed in to the "
                           "accounts service")


def _profile_of(row: Any) -> Profile:
    return Profile(str(row.player_id), str(row.display_name), str(row.avatar_id),
                   str(row.locale), int(row.created_ms))


def _add_missing_columns(engine: Engine) -> None:
    """Bring a SQLite file of an older version to the models: add every column a table
    lacks, with its server default (what PostgreSQL's revisions do for its rows)."""
    with engine.begin() as connection:
        for table in TABLES:
            present = {row[1] for row in connection.exec_driver_sql(
                f"PRAGMA table_info({table.name})")}
            for column in table.columns:
                if column.name not in present:
                    if column.server_default is None:
                        raise AssertionError(f"{table.name}.{column.name} was added to the "
                                             "table later: give it a server_default")
                    added = CreateColumn(column).compile(dialect=engine.dialect)
                    connection.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {added}")


def _identity_of(row: Any) -> Identity:
    return Identity(str(row.provider), str(row.subject), str(row.player_id), str(row.email),
                    int(row.linked_ms))
