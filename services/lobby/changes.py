"""Applying table changes: load, change (pure), save at the loaded version, tell watchers.

:class:`Tables` is the one place that writes tables, shared by the lobby's RPCs, its
follower of match ends and the presence watcher, so every change is version-checked,
recorded as updates and announced to this process's watch streams.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc

from dast.v1 import lobby_pb2
from services.lobby.reasons import LobbyReason
from services.lobby.store import LobbyStore, StaleTable
from services.lobby.tables import Change, Update
from services.platform.clock import wall_clock_ms
from services.platform.errors import ServiceError
from services.platform.validation import quoted_input

_ATTEMPTS = 8


class TableWatchers:
    """Wakes this process's watch streams of a table when it changes."""

    def __init__(self) -> None:
        self._events: dict[str, set[asyncio.Event]] = {}

    def register(self, table_id: str) -> asyncio.Event:
        """An event set whenever ``table_id`` changes (call :meth:`forget` when done)."""
        wake = asyncio.Event()
        self._events.setdefault(table_id, set()).add(wake)
        return wake

    def forget(self, table_id: str, wake: asyncio.Event) -> None:
        """Stop waking ``wake``."""
        events = self._events.get(table_id)
        if events is not None:
            events.discard(wake)
            if not events:
                del self._events[table_id]

    def changed(self, table_id: str) -> None:
        """Wake every watcher of ``table_id``."""
        for wake in self._events.get(table_id, ()):
            wake.set()


class Tables:
    """Versioned changes of stored tables (async; the store runs in threads)."""

    def __init__(
        self, store: LobbyStore, *, clock: Callable[[], int] = wall_clock_ms,
        watchers: TableWatchers | None = None,
    ) -> None:
        self.store = store
        self.watchers = watchers or TableWatchers()
        self._clock = clock
        self._listeners: list[Callable[[lobby_pb2.Table, list[Update]], None]] = []

    def add_listener(self, listener: Callable[[lobby_pb2.Table, list[Update]], None]) -> None:
        """Call ``listener(table, updates)`` after every change this process saves."""
        self._listeners.append(listener)

    def _changed(self, table: lobby_pb2.Table, updates: list[Update]) -> None:
        self.watchers.changed(table.table_id)
        for listener in self._listeners:
            listener(table, updates)

    async def get(self, table_id: str) -> lobby_pb2.Table:
        """The stored table.

        :raises TableNotFound: if there is none.
        """
        return await asyncio.to_thread(self.store.get, table_id)

    async def create(self, change: Change) -> lobby_pb2.Table:
        """Store a new table."""
        table = await asyncio.to_thread(
            self.store.create, change.table, change.updates, self._clock()
        )
        self._changed(table, change.updates)
        return table

    async def apply(
        self, table_id: str, change_of: Callable[[lobby_pb2.Table], Change]
    ) -> lobby_pb2.Table:
        """Load ``table_id``, change it with ``change_of`` and save; retried on a race.

        :raises TableNotFound: if there is none.
        :raises LobbyError: whatever ``change_of`` refuses.
        :raises ServiceError: ABORTED if other writers keep winning.
        """
        for _ in range(_ATTEMPTS):
            loaded = await self.get(table_id)
            change = change_of(loaded)
            if not change.updates:
                return change.table
            try:
                saved = await asyncio.to_thread(
                    self.store.save, change.table, loaded.version, change.updates, self._clock()
                )
            except StaleTable:
                continue
            self._changed(saved, change.updates)
            return saved
        raise ServiceError(grpc.StatusCode.ABORTED, LobbyReason.CONCURRENT_CHANGE,
                           f"table {quoted_input(table_id)} keeps changing; retry")
