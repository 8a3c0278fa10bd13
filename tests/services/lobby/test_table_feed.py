"""The lobby's table changes reach the tables' feed once each, from its own outbox."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from dast.v1 import common_pb2, lobby_pb2
from services.lobby import tables
from services.lobby.changes import Tables
from services.lobby.feed import FeedPublisher
from services.lobby.store import LobbyStore
from services.platform.table_feed import InProcessTableFeed, NatsTableFeed
from tests.conftest import NatsNames

Kind = lobby_pb2.TableUpdateKind


async def _a_table_with_a_guest(writer: Tables) -> lobby_pb2.Table:
    settings = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, private=True)
    table = await writer.create(tables.new_table("t1", settings, "host", "Host", "c0de"))
    return await writer.apply(table.table_id,
                              lambda fresh: tables.join(fresh, "guest", "Guest", None))


async def test_every_recorded_update_is_published_in_order_without_the_invite_code(
    tmp_path: Path,
) -> None:
    store = LobbyStore.open(f"sqlite:///{tmp_path / 'lobby.db'}")
    feed = InProcessTableFeed()
    received = feed.follow()
    try:
        writer = Tables(store)
        await _a_table_with_a_guest(writer)
        publisher = FeedPublisher(store, feed)
        assert await publisher.publish_pending() == 2
        assert await publisher.publish_pending() == 0  # marked: nothing left
        got = [await anext(received), await anext(received)]
        assert [(u.kind, u.version, u.player_id) for u in got] == [
            (Kind.TABLE_UPDATE_KIND_CREATED, 1, "host"),
            (Kind.TABLE_UPDATE_KIND_PLAYER_JOINED, 2, "guest"),
        ]
        assert all(u.table.table_id == "t1" and not u.table.invite_code for u in got)
    finally:
        await feed.close()
        store.close()


async def test_a_publisher_killed_before_marking_republishes_and_the_feed_drops_the_repeat(
    tmp_path: Path,
) -> None:
    store = LobbyStore.open(f"sqlite:///{tmp_path / 'lobby.db'}")
    feed = InProcessTableFeed()
    received = feed.follow()
    try:
        await _a_table_with_a_guest(Tables(store))
        # The first lobby published and died before recording it: nothing is marked.
        for updates in store.unpublished():
            await feed.publish(updates)
        restarted = FeedPublisher(store, feed)
        assert await restarted.publish_pending() == 2  # sent again...
        versions = [(await anext(received)).version for _ in range(2)]
        assert versions == [1, 2]
        with pytest.raises(TimeoutError):  # ...and stored once
            await asyncio.wait_for(anext(received), 0.2)
        assert store.unpublished() == []
    finally:
        await feed.close()
        store.close()


async def test_the_nats_feed_stores_each_update_once(
    tmp_path: Path, nats_url: str, nats_names: NatsNames,
) -> None:
    stream = f"{nats_names.stream}_TABLES"
    prefix = nats_names.subject_prefix.replace(".events", ".tables")
    store = LobbyStore.open(f"sqlite:///{tmp_path / 'lobby.db'}")
    feed = NatsTableFeed(nats_url, stream=stream, subject_prefix=prefix)
    await feed.start()
    connection = await nats.connect(nats_url, connect_timeout=2, max_reconnect_attempts=0)
    try:
        await _a_table_with_a_guest(Tables(store))
        for updates in store.unpublished():  # a publish whose mark was lost
            await feed.publish(updates)
        assert await FeedPublisher(store, feed).publish_pending() == 2
        subscription = await connection.jetstream().pull_subscribe(
            f"{prefix}.>", stream=stream,
            config=ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL))
        msgs = await subscription.fetch(10, timeout=2)
        updates = [lobby_pb2.TableUpdate.FromString(msg.data) for msg in msgs]
        assert [(u.version, u.kind) for u in updates] == [
            (1, Kind.TABLE_UPDATE_KIND_CREATED), (2, Kind.TABLE_UPDATE_KIND_PLAYER_JOINED)]
        assert {msg.subject for msg in msgs} == {f"{prefix}.t1"}
    finally:
        await connection.jetstream().delete_stream(stream)
        await connection.close()
        await feed.close()
        store.close()
