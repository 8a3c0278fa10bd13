"""Subscribe's merge of the stored log and the live bus: no gap, no duplicate.

The live subscription starts first; then the store's entries after ``after_seq`` are
replayed; then live entries follow, skipping any seq already sent. A live entry further
ahead than the next seq (a gap: the subscription started late, or the bus lost a message)
is filled from the store, and a slow poll of the store backs the bus up, so a stream
never stalls on an event the bus failed to carry. The stream ends after the match's
final event (the one revealing the server seed).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Final

from dast.v1 import log_pb2
from engine.core.protocol import Game
from services.platform.bus import Bus, LiveStream
from services.platform.store import EventStore

POLL_SECONDS: Final = (0.2, 1.0, 3.0, 10.0)
"""Waits between store polls while the bus is silent (the last one repeats)."""


async def _next_live(live: LiveStream) -> log_pb2.LogEntry | None:
    """The next live entry, or None once the live feed has ended or failed."""
    try:
        return await anext(live)
    except Exception:  # the bus is down: the store poll carries the stream on
        return None


def _poll_waits(schedule: tuple[float, ...]) -> Iterator[float]:
    yield from schedule
    while True:
        yield schedule[-1]


async def log_after(
    store: EventStore,
    bus: Bus,
    game: Game,
    game_id: str,
    after_seq: int,
    *,
    on_live: Callable[[log_pb2.LogEntry], None] | None = None,
    poll_seconds: tuple[float, ...] = POLL_SECONDS,
) -> AsyncIterator[log_pb2.LogEntry]:
    """Every entry of ``game_id`` after ``after_seq``, stored then live, each seq once.

    :raises GameNotFound: if the game does not exist.
    """
    live = bus.live(game_id)
    pending: asyncio.Future[log_pb2.LogEntry | None] = asyncio.ensure_future(_next_live(live))
    try:
        # Nothing published from now on is lost; if the bus is down the store poll carries on.
        with contextlib.suppress(Exception):
            await live.ensure_subscribed()
        last = after_seq
        for entry in await asyncio.to_thread(store.load, game_id, last):
            yield entry
            last = entry.event.seq
            if game.revealed_seed(entry.event) is not None:
                return
        waits = _poll_waits(poll_seconds)
        while True:
            done, _ = await asyncio.wait({pending}, timeout=next(waits))
            live_entry = pending.result() if done else None
            if done and live_entry is None:
                pending = asyncio.get_running_loop().create_future()  # live feed gone: poll
            if live_entry is not None:
                pending = asyncio.ensure_future(_next_live(live))
                waits = _poll_waits(poll_seconds)
                if live_entry.event.seq <= last:
                    continue
                if on_live is not None:
                    on_live(live_entry)
                if live_entry.event.seq == last + 1:
                    fresh = [live_entry]
                else:
                    fresh = await asyncio.to_thread(store.load, game_id, last)
            else:
                fresh = await asyncio.to_thread(store.load, game_id, last)
            for entry in fresh:
                if entry.event.seq != last + 1:
                    continue
                yield entry
                last = entry.event.seq
                if game.revealed_seed(entry.event) is not None:
                    return
    finally:
        pending.cancel()
        with contextlib.suppress(BaseException):
            await pending
        with contextlib.suppress(Exception):
            await live.aclose()
