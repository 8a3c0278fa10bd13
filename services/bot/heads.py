"""The last event of every game in the event store: what consumers rebuild from on start.

The in-process bus forgets undelivered events when its process stops, and a durable NATS
consumer only resumes what it had not acknowledged; the turn timers (pending deadlines) and
the bot service (games waiting for a bot) therefore rebuild their work from each game's
last stored event when they start.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from dast.v1 import log_pb2
from engine.registry import game_of_event

_HEADS = text(
    "SELECT e.game_id, e.event FROM events e "
    "JOIN games g ON e.game_id = g.game_id AND e.seq = g.last_seq"
)


@dataclass(frozen=True)
class Head:
    """A game's last stored event."""

    game_id: str
    event: log_pb2.Event

    @property
    def is_over(self) -> bool:
        """The event ends the match (it reveals the server seed)."""
        return game_of_event(self.event).revealed_seed(self.event) is not None


def sqlite_or_postgres(url: str) -> bool:
    """Whether :func:`store_heads` can read the store at ``url``."""
    return make_url(url).get_backend_name() in ("sqlite", "postgresql")


def store_heads(url: str) -> list[Head]:
    """Every game's last event in the event store at ``url`` (its ``games`` and ``events``
    tables)."""
    engine = create_engine(url)
    try:
        with engine.connect() as db:
            rows = db.execute(_HEADS).all()
    finally:
        engine.dispose()
    heads = []
    for row in rows:
        event = log_pb2.Event()
        event.ParseFromString(row.event)
        heads.append(Head(row.game_id, event))
    return heads


def unfinished_games(url: str) -> list[str]:
    """The ids of the games in the store at ``url`` whose match is not over."""
    return [head.game_id for head in store_heads(url) if not head.is_over]
