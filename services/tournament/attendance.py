"""Players expected at their tournament tables, told to the shared presence board.

The takeover sweeper (:mod:`services.bot.presence`) hands a seat to a bot when the presence
board (:mod:`services.platform.presence_kv`) shows its player gone from every game replica
for the grace period. A player who never opened a stream on a match has no record there at
all, so without more their seat would wait for them forever (a tournament with no round
time limit then never ends). :class:`Attendance` closes that gap: for every match the
conductor creates (or finds created), it publishes a presence record of its own listing the
match's players as *gone since the match was known to exist*. To the sweeper that reads
exactly like a replica whose stream of theirs closed at that moment: a player who opens no
stream within the grace period is absent, a bot takes the seat (reason ``DISCONNECTED``)
and plays it, and the player's first stream gives it back (``RECONNECTED``), as after any
reconnection. A player with a stream open on any replica is present whatever this record
says (:func:`~services.platform.presence_kv.away_since`).

So the rule is the board's and the sweeper's, shared by every replica through NATS:

- the record's replica id starts with :data:`EXPECTATION_PREFIX` (one per tournament
  replica), its game the match's id;
- it is published again at every sweep of the conductor (:meth:`Attendance.renew`): the
  bucket forgets records after its TTL and loses them when NATS restarts, and a record
  renewed is never lost for long. The moment each player was expected from never moves, so
  renewing never restarts anyone's grace;
- a player a game replica has reported (a stream opened, even if closed since) is dropped
  from it: from then on the replicas' own records say where the player is; the record goes
  when its match has a result, or when every player has been seen;
- a replica that creates a match another one created first (a sweep finding it), or that
  restarts, takes the earliest moment an expectation on the board gives each player, so
  nobody gets the grace period twice; with no such record left (NATS restarted as well),
  it expects them from its first sweep, so their grace starts again then. Every moment is
  taken once the match exists: a takeover never comes before a player could subscribe.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Collection, Iterable
from typing import Final

import structlog

from services.platform.clock import Clock, wall_clock_ms
from services.platform.presence_kv import PresenceBoard, PresenceRecord
from services.tournament.store import MatchPlace

EXPECTATION_PREFIX: Final = "expected:"
"""How the replica id of an expectation record starts (game replicas' ids are hex)."""
_log = structlog.get_logger(component="tournament-attendance")


def is_expectation(record: PresenceRecord) -> bool:
    """Whether ``record`` is an expectation of a tournament replica, not a game replica's
    report of streams."""
    return record.replica_id.startswith(EXPECTATION_PREFIX)


class Attendance:
    """The expectations one tournament replica publishes (see the module docstring)."""

    def __init__(self, board: PresenceBoard, *, clock: Clock = wall_clock_ms,
                 replica_id: str | None = None) -> None:
        self.board = board
        self.replica_id = f"{EXPECTATION_PREFIX}{replica_id or uuid.uuid4().hex}"
        self._clock = clock
        self._expected: dict[str, dict[str, int]] = {}
        """game id → player → since when the player is expected (ms)."""
        self._places: dict[str, MatchPlace] = {}

    def expected(self, game_id: str) -> dict[str, int]:
        """The players still expected at ``game_id`` and since when (tests)."""
        return dict(self._expected.get(game_id, {}))

    def places(self) -> list[MatchPlace]:
        """The matches this replica expects players at."""
        return list(self._places.values())

    async def expect(self, place: MatchPlace, players: Iterable[str]) -> None:
        """The match at ``place`` exists and ``players`` sit at it: expect them from now, or
        from the earlier moment another tournament replica (or this one before a restart)
        expects them from on the board; a match expected here already keeps its players'
        moments."""
        await self.expect_all([(place, players)])

    async def expect_all(self, matches: Iterable[tuple[MatchPlace, Iterable[str]]]) -> None:
        """:meth:`expect` for every ``(place, players)`` of a round at once: the board is
        read once for all of them (it holds a record per player and match: read per match,
        a round of 256 tables read it 256 times) and their records are published
        together."""
        now = self._clock()
        wanted: dict[str, tuple[MatchPlace, dict[str, int]]] = {}
        for place, players in matches:
            expected = dict.fromkeys(players, now)
            if place.game_id not in self._expected and expected:
                wanted[place.game_id] = (place, expected)
        if not wanted:
            return
        for record in await self.board.records():
            if record.game_id in wanted and is_expectation(record):
                expected = wanted[record.game_id][1]
                for player, since in record.closed.items():
                    if player in expected:
                        expected[player] = min(expected[player], since)
        for game_id, (place, expected) in wanted.items():
            self._expected[game_id] = expected
            self._places[game_id] = place
        await asyncio.gather(*(self._publish(game_id, expected)
                               for game_id, (_, expected) in wanted.items()))

    async def renew(self, ended: Collection[str]) -> None:
        """Drop the expectations of the matches in ``ended`` (with a result, or of a round
        or tournament over) and publish the others again, less the players a game replica
        has reported since."""
        records = await self.board.records()
        seen = {(record.game_id, player) for record in records if not is_expectation(record)
                for player in (*record.open, *record.closed)}
        for game_id in list(self._expected):
            still = {player: since for player, since in self._expected[game_id].items()
                     if (game_id, player) not in seen}
            if game_id in ended or not still:
                del self._expected[game_id]
                del self._places[game_id]
                await self._remove(game_id)
                continue
            self._expected[game_id] = still
            await self._publish(game_id, still)

    async def _publish(self, game_id: str, expected: dict[str, int]) -> None:
        record = PresenceRecord(game_id, self.replica_id, self._clock(), closed=dict(expected))
        try:
            await self.board.publish(record)
        except Exception as error:  # NATS away: the next renewal publishes it again
            _log.warning("expectation_not_published", game_id=game_id, error=repr(error))

    async def _remove(self, game_id: str) -> None:
        try:
            await self.board.remove(game_id, self.replica_id)
        except Exception as error:  # the bucket's TTL removes it anyway
            _log.warning("expectation_not_removed", game_id=game_id, error=repr(error))
