"""Banned players, seen by every replica: once an operator bans a player, every server
refuses their calls (PERMISSION_DENIED ``player_banned``, with the time the ban ends and
its reason) and ends their open streams, and the lobby and the tournament service take
them out of their tables and entries.

The accounts service owns the bans (its table ``accounts_bans``, the record an operator's
``BanPlayer`` and ``LiftBan`` write) and publishes each one here (:meth:`Bans.publish`);
every server reads them from memory (:meth:`Bans.ban_of`, a dictionary lookup after the
token cache) and is told of each change (:meth:`Bans.listen`). Two lists behind one
interface:

- :class:`InProcessBans` for one process (embedded mode, tests);
- :class:`NatsBans`, a JetStream key-value bucket (the deployment's ``<D>_BANNED``,
  :mod:`services.platform.nats_names`; key the player id in URL-safe base64, value the
  ban), kept until the ban is lifted or the accounts service finds it expired, mirrored in
  memory by a watcher (:class:`~services.platform.kv_mirror.MirroredBucket`).

Killed between its database and the bucket, the accounts service still publishes the ban:
it republishes every ban of its table when it starts and every minute after
(:meth:`services.accounts.moderation.Moderation.publish_bans`), and deletes from the bucket
those lifted or over. NATS away, a replica keeps refusing the bans its mirror holds and
learns the others when NATS is back; the accounts service itself refuses a banned player's
sign-ins and refreshes from its table, so no new token reaches them meanwhile.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Protocol

import grpc

from services.platform.clock import wall_clock_ms
from services.platform.errors import Reason, ServiceError, rich_status
from services.platform.kv_mirror import MirroredBucket

_log = logging.getLogger(__name__)

BanListener = Callable[[str, "Ban | None"], None]
"""Told of each change of a player's ban: the player id and their ban (None: lifted)."""


@dataclass(frozen=True, slots=True)
class Ban:
    """A player's ban: until when (None: until an operator lifts it) and why; or, with
    ``erased``, a deleted account, whose player id nobody plays under again."""

    until_ms: int | None
    reason: str
    erased: bool = False

    def in_force(self, now_ms: int) -> bool:
        """Whether the ban still holds at ``now_ms``."""
        return self.until_ms is None or self.until_ms > now_ms

    def to_json(self) -> bytes:
        """The bucket's value."""
        fields: dict[str, object] = {"until": self.until_ms, "reason": self.reason}
        if self.erased:
            fields["erased"] = True
        return json.dumps(fields).encode()

    @classmethod
    def from_json(cls, value: bytes) -> Ban:
        """Read a bucket's value.

        :raises ValueError: if it is not one.
        """
        try:
            fields = json.loads(value)
            until, reason = fields["until"], fields["reason"]
        except (KeyError, TypeError) as error:
            raise ValueError("not a ban") from error
        erased = fields.get("erased", False)
        if ((until is not None and not isinstance(until, int)) or not isinstance(reason, str)
                or not isinstance(erased, bool)):
            raise ValueError("not a ban")
        return cls(until, reason, erased)

    def status(self) -> grpc.Status:
        """How a call of the banned player is refused (:func:`banned_status`)."""
        return banned_status(self)


def describe_until(until_ms: int | None) -> str:
    """When a ban ends, for people: an ISO 8601 UTC time, or "until it is lifted"."""
    if until_ms is None:
        return "until it is lifted"
    moment = datetime.fromtimestamp(until_ms / 1000, tz=UTC)
    return f"until {moment.isoformat(timespec='seconds').replace('+00:00', 'Z')}"


def banned_error(ban: Ban) -> ServiceError:
    """PERMISSION_DENIED ``player_banned``: the ban's end (``until_ms``, empty when it lasts
    until lifted) and its reason in ``ErrorInfo.metadata``, both in the message; for a
    deleted account UNAUTHENTICATED ``account_deleted``."""
    if ban.erased:
        return ServiceError(grpc.StatusCode.UNAUTHENTICATED, Reason.ACCOUNT_DELETED,
                            "this account was deleted: sign in again to play as a new player")
    return ServiceError(
        grpc.StatusCode.PERMISSION_DENIED, Reason.PLAYER_BANNED,
        f"this player is banned {describe_until(ban.until_ms)}: {ban.reason}",
        metadata={"until_ms": "" if ban.until_ms is None else str(ban.until_ms),
                  "ban_reason": ban.reason},
    )


def banned_status(ban: Ban) -> grpc.Status:
    """:func:`banned_error` as the status a refused call or an ended stream answers."""
    error = banned_error(ban)
    return rich_status(error.code, error.reason, error.message, metadata=error.metadata)


ERASED_REASON: Final = "account deleted"
"""The reason of the entry a deleted account leaves on the list."""


def erased_entry() -> Ban:
    """What the list holds for a deleted account (for :data:`ERASURES_LISTED_DAYS`)."""
    return Ban(None, ERASED_REASON, erased=True)


ERASURES_LISTED_DAYS: Final = 30
"""How long a deleted account stays on the list: every service has learned of it by then
(the stats service keeps it for good), and a token of theirs expired long before."""


def player_key(player_id: str) -> str:
    """A player's key in the bucket (a player id may hold characters a key may not)."""
    return base64.urlsafe_b64encode(player_id.encode()).decode().rstrip("=")


def player_of_key(key: str) -> str:
    """The player id of a bucket's key.

    :raises ValueError: for a key :func:`player_key` did not make.
    """
    try:
        return base64.urlsafe_b64decode(key + "=" * (-len(key) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise ValueError("not a player's key") from error


class Bans(Protocol):
    """Where the accounts service publishes bans and every server reads them."""

    async def start(self) -> None:
        """Connect (idempotent)."""
        ...

    async def publish(self, player_id: str, ban: Ban | None) -> None:
        """Publish ``player_id``'s ban (None: lifted); in force here at once."""
        ...

    def ban_of(self, player_id: str) -> Ban | None:
        """``player_id``'s ban in force now, or None."""
        ...

    def banned(self) -> dict[str, Ban]:
        """Every ban known here (in force or not yet forgotten)."""
        ...

    def listen(self, listener: BanListener) -> None:
        """Call ``listener`` with each change of a ban, here or elsewhere."""
        ...

    async def close(self) -> None:
        """Disconnect."""
        ...


class _BanMirror:
    """The bans known here."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._bans: dict[str, Ban] = {}
        self._listeners: list[BanListener] = []

    def ban_of(self, player_id: str) -> Ban | None:
        """See :class:`Bans`."""
        if not self._bans:
            return None
        ban = self._bans.get(player_id)
        return ban if ban is not None and ban.in_force(self._clock()) else None

    def banned(self) -> dict[str, Ban]:
        """See :class:`Bans`."""
        return dict(self._bans)

    def listen(self, listener: BanListener) -> None:
        """See :class:`Bans`."""
        self._listeners.append(listener)

    def _learn(self, player_id: str, ban: Ban | None) -> None:
        known = self._bans.get(player_id)
        if ban == known:
            return
        if ban is None:
            del self._bans[player_id]
        else:
            self._bans[player_id] = ban
        for listener in self._listeners:
            try:
                listener(player_id, ban)
            except Exception:
                _log.exception("a ban listener failed")


class InProcessBans(_BanMirror):
    """:class:`Bans` in memory, for one process."""

    def __init__(self, *, clock: Callable[[], int] = wall_clock_ms) -> None:
        super().__init__(clock)

    async def start(self) -> None:
        """See :class:`Bans`."""

    async def publish(self, player_id: str, ban: Ban | None) -> None:
        """See :class:`Bans`."""
        self._learn(player_id, ban)

    async def close(self) -> None:
        """See :class:`Bans`."""


class NatsBans(MirroredBucket, _BanMirror):
    """:class:`Bans` over a JetStream key-value bucket (see the module docstring)."""

    def __init__(self, url: str, *, bucket: str, resync_ms: int = 30_000,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        MirroredBucket.__init__(self, url, bucket=bucket, ttl_seconds=0, resync_ms=resync_ms)
        _BanMirror.__init__(self, clock)
        self._in_snapshot: set[str] | None = None

    async def publish(self, player_id: str, ban: Ban | None) -> None:
        """See :class:`Bans`: in force here at once, published in the background."""
        self._learn(player_id, ban)
        self._queue(player_key(player_id), None if ban is None else ban.to_json())

    def _apply(self, key: str, value: bytes | None) -> None:
        try:
            player_id = player_of_key(key)
            ban = None if value is None else Ban.from_json(value)
        except ValueError:
            _log.warning("ignoring a malformed ban %s", key)
            return
        if self._in_snapshot is not None:
            self._in_snapshot.add(player_id)
        self._learn(player_id, ban)

    def _snapshot_started(self) -> None:
        self._in_snapshot = set()

    def _snapshot_done(self) -> None:
        """Bans the snapshot lacks were lifted while the watch was away: forget them."""
        seen, self._in_snapshot = self._in_snapshot or set(), None
        for player_id in set(self._bans) - seen:
            if player_key(player_id) not in self._pending:  # not one published here, yet
                self._learn(player_id, None)


def open_bans(nats_url: str | None, *, bucket: str,
              clock: Callable[[], int] = wall_clock_ms) -> Bans:
    """The ban list of a deployment: JetStream's when ``nats_url`` is set, else in memory."""
    if nats_url:
        return NatsBans(nats_url, bucket=bucket, clock=clock)
    return InProcessBans(clock=clock)


BAN_REASON_CHARS: Final = 256
"""The longest reason an operator may give a ban."""
