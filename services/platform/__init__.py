"""The platform under every service: the event store, the bus and the relay between them.

- :mod:`services.platform.store`: :class:`EventStore` (errors, :class:`MemoryEventStore`,
  :func:`open_store`); :mod:`services.platform.store_sql` (SQLite, PostgreSQL);
  :mod:`services.platform.models` (the tables); :mod:`services.platform.migrations`
  (Alembic, :func:`upgrade_database`).
- :mod:`services.platform.bus`: :class:`Bus`, :class:`InProcessBus`, :func:`open_bus`;
  :mod:`services.platform.bus_nats` (:class:`NatsBus` on JetStream).
- :mod:`services.platform.relay`: :class:`Relay`, store outbox → bus.
"""

from __future__ import annotations

from services.platform.bus import Bus, InProcessBus, LiveStream, Published, open_bus
from services.platform.relay import Relay
from services.platform.store import (
    AppendResult,
    ConcurrencyConflict,
    EventStore,
    GameExists,
    GameNotFound,
    InvalidEntries,
    MemoryEventStore,
    OutboxStore,
    StoreError,
    open_store,
)

__all__ = [
    "AppendResult",
    "Bus",
    "ConcurrencyConflict",
    "EventStore",
    "GameExists",
    "GameNotFound",
    "InProcessBus",
    "InvalidEntries",
    "LiveStream",
    "MemoryEventStore",
    "OutboxStore",
    "Published",
    "Relay",
    "StoreError",
    "open_bus",
    "open_store",
]
