"""Presence boards of the tests: replicas' views of one NATS key-value bucket of a test's own."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

import nats

from services.platform.presence_kv import NatsPresenceBoard


@contextlib.asynccontextmanager
async def nats_boards(nats_url: str, count: int = 2) -> AsyncIterator[list[NatsPresenceBoard]]:
    """``count`` started boards on one fresh bucket (as many replicas see it), closed and the
    bucket deleted on exit."""
    bucket = f"TEST_PRESENCE_{uuid.uuid4().hex[:12]}"
    boards = [NatsPresenceBoard(nats_url, bucket=bucket, ttl_ms=60_000) for _ in range(count)]
    for board in boards:
        await board.start()
    try:
        yield boards
    finally:
        for board in boards:
            await board.close()
        with contextlib.suppress(Exception):
            connection = await nats.connect(nats_url, connect_timeout=2)
            await connection.jetstream().delete_key_value(bucket)
            await connection.close()
