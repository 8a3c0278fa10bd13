"""The relay's side of the PostgreSQL event store: claims, reads and marks, one statement each.

A relay pass claims games, reads their unrelayed events, publishes them and marks how far it
got. Through the connection pool and SQLAlchemy Core each of those steps cost a checkout (with
its liveness ping), a ``BEGIN``, the statement and a ``COMMIT`` or ``ROLLBACK``: four round
trips, and the Core's Python around each. Under load a replica makes a pass every few
milliseconds, so that was about a quarter of its CPU per command. Here every step is ONE
statement, atomic on its own, run in autocommit on a connection the relay keeps (pre-built
SQL, which psycopg prepares on the server once it has run a few times): one round trip each.

Every statement that changes several games locks their rows first, in byte order
(``ORDER BY game_id COLLATE "C" FOR UPDATE`` in a subquery; the rows are locked as the sort
returns them). The store's writer locks the games of a batch in that order too
(:mod:`services.platform.store_sql_writes`), so a mark and a batch of appends never wait for
each other in a circle.

A failed statement drops the connection (the next call opens a new one) and raises, as the
pooled path did: the relay backs off and tries again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from services.platform.clock import wall_clock_ms as now_ms
from services.platform.store import INTERRUPTED_LEASE_MS, RELAY_LEASE_MS, Unrelayed
from services.platform.store_sql_writes import entry_of
from services.platform.store_writer import let_go

# Picks and leases games in one statement, skipping rows another relay has locked, so that
# concurrent replicas split the backlog instead of publishing the same events twice.
# RETURNING shows the new lease; the previous one (was that claim interrupted?) comes from
# the locking subquery.
CLAIM = """
UPDATE games SET relay_lease_until_ms = %(until)s
FROM (
    SELECT game_id AS claimed_id, relay_lease_until_ms AS previous_lease FROM games
    WHERE relayed_seq < last_seq AND relay_lease_until_ms <= %(now)s
    ORDER BY game_id LIMIT %(max_games)s
    FOR UPDATE SKIP LOCKED) AS claimed
WHERE games.game_id = claimed.claimed_id
RETURNING games.game_id, games.game_type, games.relayed_seq, claimed.previous_lease
"""

# The claimed games' events after each one's watermark, in (game_id, seq) order. Read after
# the claim committed: its row locks would hold back every append to those games meanwhile.
UNRELAYED = """
SELECT e.game_id, e.event, e.hash
FROM unnest(%(ids)s::text[], %(after)s::bigint[]) AS claimed(game_id, after_seq)
JOIN events e ON e.game_id = claimed.game_id
    AND e.seq > claimed.after_seq AND e.seq <= claimed.after_seq + %(max_events)s
ORDER BY e.game_id, e.seq
"""

_LOCKED_IN_ORDER = (
    "SELECT game_id AS locked_id FROM games WHERE game_id = ANY(%(ids)s::text[]) "
    'ORDER BY game_id COLLATE "C" FOR UPDATE'
)

MARK = """
UPDATE games SET relayed_seq = marks.seq, relay_lease_until_ms = 0
FROM unnest(%(ids)s::text[], %(seqs)s::bigint[]) AS marks(game_id, seq),
     (""" + _LOCKED_IN_ORDER + """) AS locked
WHERE games.game_id = marks.game_id AND locked.locked_id = marks.game_id
    AND games.relayed_seq < marks.seq
"""

RELEASE = """
UPDATE games SET relay_lease_until_ms = %(lease)s
FROM (""" + _LOCKED_IN_ORDER + """) AS locked
WHERE games.game_id = locked.locked_id
"""

RENEW = """
UPDATE games SET relay_lease_until_ms = %(until)s
FROM (""" + _LOCKED_IN_ORDER + """) AS locked
WHERE games.game_id = locked.locked_id AND games.relay_lease_until_ms > %(now)s
"""


class PostgresOutbox:
    """:class:`~services.platform.store.OutboxStore`'s relay methods on one kept connection.

    ``connect()`` returns a DBAPI connection (a SQLAlchemy pool proxy of a psycopg one); it
    is switched to autocommit and kept until :meth:`close` or a failure, and never goes back
    to the pool. Thread-safe: one statement at a time (a relay's renewals run beside its
    pass).
    """

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._connection: Any = None
        self._lock = threading.Lock()

    def _run(self, statement: str, params: dict[str, Any], *, rows: bool) -> list[Any]:
        with self._lock:
            if self._connection is None:
                connection = self._connect()
                connection.driver_connection.autocommit = True
                self._connection = connection
            try:
                cursor = self._connection.cursor()
                cursor.execute(statement, params)
                return list(cursor.fetchall()) if rows else []
            except Exception:
                self._drop()
                raise

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        let_go(connection, invalidate=True)

    def close(self) -> None:
        """Close the connection. It is invalidated, never returned: switched to autocommit,
        it would turn the next borrower's transactions into single statements."""
        with self._lock:
            self._drop()

    def claim_unrelayed(
        self, *, max_games: int, max_events: int, lease_ms: int = RELAY_LEASE_MS
    ) -> list[Unrelayed]:
        """See :meth:`~services.platform.store.OutboxStore.claim_unrelayed`."""
        now = now_ms()
        games = self._run(CLAIM, {"until": now + lease_ms, "now": now, "max_games": max_games},
                          rows=True)
        if not games:
            return []
        games.sort(key=lambda game: str(game[0]))
        pending: dict[str, list[Any]] = {game[0]: [] for game in games}
        for game_id, event, hash_ in self._run(UNRELAYED, {
            "ids": [game[0] for game in games], "after": [game[2] for game in games],
            "max_events": max_events,
        }, rows=True):
            pending[game_id].append(entry_of(event, hash_))
        return [
            Unrelayed(game_id, game_type, pending[game_id], interrupted=previous_lease != 0)
            for game_id, game_type, _relayed_seq, previous_lease in games
        ]

    def mark_relayed_many(self, marks: Sequence[tuple[str, int]]) -> None:
        """See :meth:`~services.platform.store.OutboxStore.mark_relayed_many`."""
        if not marks:
            return
        latest: dict[str, int] = {}
        for game_id, seq in marks:  # one mark per game: the furthest
            latest[game_id] = max(seq, latest.get(game_id, seq))
        ids = sorted(latest)
        self._run(MARK, {"ids": ids, "seqs": [latest[game_id] for game_id in ids]}, rows=False)

    def release(self, game_ids: Sequence[str], *, interrupted: bool = False) -> None:
        """See :meth:`~services.platform.store.OutboxStore.release`."""
        if game_ids:
            self._run(RELEASE, {"ids": sorted(set(game_ids)),
                                "lease": INTERRUPTED_LEASE_MS if interrupted else 0}, rows=False)

    def renew_claims(self, game_ids: Sequence[str], *, lease_ms: int = RELAY_LEASE_MS) -> None:
        """See :meth:`~services.platform.store.OutboxStore.renew_claims`."""
        if game_ids:
            now = now_ms()
            self._run(RENEW, {"ids": sorted(set(game_ids)), "until": now + lease_ms, "now": now},
                      rows=False)
