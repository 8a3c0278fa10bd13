"""The last stored event of every game: the in-process bus's answer to ``last_events``.

With NATS the stream keeps each game's last message, and consumers ask it
(:meth:`services.platform.bus_nats.NatsBus.last_events`). The in-process bus keeps nothing
once delivered, but it only ever runs in the process that owns the event store (the embedded
backend), so the composition root hands it :func:`last_stored_events` as its history. No
service reads these tables itself: they ask the bus.
"""

from __future__ import annotations

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from services.platform.bus import LogEntry, Published, game_type_name

_HEADS = text(
    "SELECT g.game_id, g.game_type, e.event, e.hash FROM events e "
    "JOIN games g ON e.game_id = g.game_id AND e.seq = g.last_seq"
)


def readable(url: str | None) -> bool:
    """Whether :func:`last_stored_events` can read the store at ``url`` (a file or server,
    not a private in-memory database)."""
    if not url:
        return False
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.database not in (None, "", ":memory:")
    return backend == "postgresql"


def last_stored_events(url: str) -> list[Published]:
    """Every game's last event in the event store at ``url`` (blocking: run it in a thread).

    A game whose type the enum no longer names is skipped (nothing could replay it).
    """
    engine = create_engine(url)
    try:
        with engine.connect() as db:
            rows = db.execute(_HEADS).all()
    finally:
        engine.dispose()
    heads = []
    for row in rows:
        entry = LogEntry()
        entry.event.ParseFromString(row.event)
        entry.hash = row.hash
        try:
            game_type = game_type_name(row.game_type)
        except ValueError:
            continue
        heads.append(Published(game_type, row.game_id, entry))
    return heads
