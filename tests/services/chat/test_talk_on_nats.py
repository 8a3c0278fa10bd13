"""Table talk in the deployment's JetStream chat stream (services/chat/talk_log.py): each
table's messages in order on its own subject, a watch resuming after a seq, the stream's
age set to the retention age an operator chose (and changed when they change it); and a
whole stack on NATS carrying a table's talk."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import nats
import pytest

from dast.v1 import chat_pb2
from services.chat.reasons import ChatReason
from services.chat.send_rate import send_rate_of
from services.chat.talk_log import DAY_MS, NatsTalkLog, TalkLog, TalkUnavailable, sender_token
from services.platform.errors import ServiceError
from tests.conftest import NatsNames
from tests.services.chat.talkers import MovedClock, Person, talking_stack
from tests.support.servers import PrivateNats

pytestmark = pytest.mark.timeout(60)


@contextlib.asynccontextmanager
async def _talk(nats_url: str, names: NatsNames, days: float) -> AsyncIterator[NatsTalkLog]:
    log = NatsTalkLog(nats_url, stream=names.names.chat_stream,
                      subject_prefix=names.names.chat_prefix, retention_ms=int(days * DAY_MS))
    await log.start()
    try:
        yield log
    finally:
        await log.close()


async def _first(log: TalkLog, table_id: str, after_seq: int, count: int
                 ) -> list[chat_pb2.ChatMessage]:
    heard: list[chat_pb2.ChatMessage] = []

    async def listen() -> None:
        async for message in log.watch(table_id, after_seq):
            heard.append(message)
            if len(heard) == count:
                return

    await asyncio.wait_for(listen(), timeout=10)
    return heard


async def _max_age(nats_url: str, stream: str) -> float:
    connection = await nats.connect(nats_url)
    try:
        info = await connection.jetstream().stream_info(stream)
        assert info.config.max_age is not None
        return float(info.config.max_age)
    finally:
        await connection.close()


async def test_each_table_hears_its_own_talk_in_order_and_resumes_after_a_seq(
        nats_url: str, nats_names: NatsNames) -> None:
    async with _talk(nats_url, nats_names, 7) as log:
        said = [await log.append(chat_pb2.ChatMessage(table_id=table, sender_id="p",
                                                      text=text, at_ms=n))
                for n, (table, text) in enumerate(
                    [("t1", "one"), ("t2", "elsewhere"), ("t1", "two"), ("t1", "three")])]
        here = [message for message in said if message.table_id == "t1"]
        assert await _first(log, "t1", 0, 3) == here
        assert [m.seq for m in here] == sorted(m.seq for m in here)
        assert await _first(log, "t1", here[0].seq, 2) == here[1:]
        assert await _first(log, "t2", 0, 1) == [said[1]]
        with pytest.raises(ValueError):
            await log.append(chat_pb2.ChatMessage(table_id="a.b", text="x"))


async def test_a_senders_talk_is_erased_at_every_table(nats_url: str,
                                                       nats_names: NatsNames) -> None:
    async with _talk(nats_url, nats_names, 7) as log:
        said = [await log.append(chat_pb2.ChatMessage(table_id=table, sender_id=sender,
                                                      text=f"{sender} at {table}"))
                for table in ("t1", "t2") for sender in ("ana", "zed", "g.odd*id")]
        await log.erase_sender("zed")
        await log.append(chat_pb2.ChatMessage(table_id="t1", sender_id="ana", text="end"))
        t1 = await _first(log, "t1", 0, 3)
        assert [m.text for m in t1] == ["ana at t1", "g.odd*id at t1", "end"]
        assert await _first(log, "t2", 0, 2) == [said[3], said[5]]


async def test_the_stream_keeps_talk_for_the_retention_age_the_operator_sets(
        nats_url: str, nats_names: NatsNames) -> None:
    stream = nats_names.names.chat_stream
    async with _talk(nats_url, nats_names, 7):
        assert await _max_age(nats_url, stream) == pytest.approx(7 * 86_400)
    async with _talk(nats_url, nats_names, 2):  # a process started with another age
        assert await _max_age(nats_url, stream) == pytest.approx(2 * 86_400)


async def test_talk_with_nats_down_is_refused_as_unavailable_and_goes_on_after(
        private_nats: PrivateNats) -> None:
    log = NatsTalkLog(private_nats.url, stream="DOWN_CHAT", subject_prefix="down.chat",
                      retention_ms=DAY_MS)
    await log.start()
    try:
        first = await log.append(chat_pb2.ChatMessage(table_id="t1", text="before"))
        private_nats.stop()
        with pytest.raises(TalkUnavailable):
            await log.append(chat_pb2.ChatMessage(table_id="t1", text="while down"))
        private_nats.start()
        for _ in range(100):  # the client reconnects by itself
            with contextlib.suppress(TalkUnavailable):
                after = await log.append(chat_pb2.ChatMessage(table_id="t1", text="after"))
                break
            await asyncio.sleep(0.1)
        assert [m.text for m in await _first(log, "t1", 0, 2)] == ["before", "after"]
        assert after.seq > first.seq
    finally:
        await log.close()


async def test_a_stack_on_nats_carries_a_tables_talk(nats_url: str,
                                                     nats_names: NatsNames) -> None:
    async with talking_stack(MovedClock(), nats_url=nats_url,
                             deployment=nats_names.deployment,
                             durable_prefix=f"{nats_names.deployment}-") as (_, channel):
        ana, bex = Person("ana", channel), Person("bex", channel)
        table = await ana.host()
        await bex.join(table)
        said = [await ana.say(table.table_id, "salaam"),
                await bex.say(table.table_id, phrase="hello")]
        assert await bex.heard(table.table_id, 2) == said


async def test_a_players_quota_is_one_across_lobby_replicas(nats_url: str,
                                                            nats_names: NatsNames) -> None:
    async with _talk(nats_url, nats_names, 7) as one, _talk(nats_url, nats_names, 7) as two:
        replicas = [send_rate_of(log, messages=5, window_ms=10_000) for log in (one, two)]
        for n in range(5):  # alternating replicas, as a load balancer would
            await replicas[n % 2].take("ana", 1_000 + n)
        for replica in replicas:
            with pytest.raises(ServiceError) as refused:
                await replica.take("ana", 2_000)
            assert refused.value.reason == ChatReason.CHAT_RATE_LIMITED
            assert refused.value.retry_after == pytest.approx(9.0)  # the first leaves at 11 s
        await replicas[1].take("bex", 2_000)  # another player's quota is their own
        await replicas[1].take("ana", 11_000)  # the first message has left the window

        # Racing themselves on both replicas at once, a player still gets the quota only.
        outcomes = await asyncio.gather(
            *(replicas[n % 2].take("cyd", 50_000) for n in range(12)), return_exceptions=True)
        assert sum(outcome is None for outcome in outcomes) == 5
        assert all(isinstance(outcome, ServiceError) for outcome in outcomes
                   if outcome is not None)


async def test_a_damaged_window_is_forgotten_and_nats_down_is_unavailable(
        private_nats: PrivateNats) -> None:
    log = NatsTalkLog(private_nats.url, stream="RATE_CHAT", subject_prefix="rate.chat",
                      retention_ms=DAY_MS)
    await log.start()
    try:
        rate = send_rate_of(log, messages=2, window_ms=10_000)
        await rate.take("ana", 1_000)
        bucket = await log.jetstream().key_value(log.rate_bucket)
        await bucket.put(sender_token("ana"), b'{"not": "a list"}')
        await rate.take("ana", 1_001)
        await rate.take("ana", 1_002)
        with pytest.raises(ServiceError):
            await rate.take("ana", 1_003)
        private_nats.stop()
        with pytest.raises(TalkUnavailable):
            await rate.take("bex", 1_004)
    finally:
        await log.close()
