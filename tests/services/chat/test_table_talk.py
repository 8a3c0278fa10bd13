"""Table talk over a whole stack (services/chat, chat.proto): who hears what, in which
order, and every refusal with its reason; the talk kept in memory expiring by the moved
clock."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from dast.v1 import chat_pb2, lobby_pb2
from services.chat.phrases import PHRASES
from services.chat.talk_log import MemoryTalkLog
from services.compose import Running
from services.platform.bans import erased_entry
from services.platform.errors import reason_of
from tests.services.chat.talkers import (
    DAY_MS,
    Listener,
    MovedClock,
    Person,
    settle,
    talking_stack,
)

pytestmark = pytest.mark.timeout(60)


async def _refused(call: object) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call  # type: ignore[misc]
    return refused.value.code(), reason_of(refused.value)


async def test_talk_reaches_the_table_in_order_and_never_another_table() -> None:
    clock = MovedClock()
    async with talking_stack(clock) as (_, channel):
        ana, bex, cyd = (Person(name, channel) for name in ("ana", "bex", "cyd"))
        here = await ana.host()
        await bex.join(here)
        there = await cyd.host()
        listeners = [Listener(ana, here.table_id), Listener(bex, here.table_id),
                     Listener(cyd, there.table_id)]
        await settle()
        said = [await ana.say(here.table_id, "salaam"),
                await bex.say(here.table_id, phrase="good_luck"),
                await ana.say(here.table_id, "hokm is hearts?"),
                await cyd.say(there.table_id, "anyone?"),
                await bex.say(here.table_id, "yes")]
        await settle()
        heard_ana, heard_bex, heard_cyd = [await listener.stop() for listener in listeners]
        mine = [message for message in said if message.table_id == here.table_id]
        assert heard_ana == heard_bex == mine
        assert [m.seq for m in mine] == sorted(m.seq for m in mine)
        assert [m.text or m.phrase_id for m in mine] == [
            "salaam", "good_luck", "hokm is hearts?", "yes"]
        assert heard_cyd == [said[3]]
        assert not any(m.from_spectator for m in mine)
        # A watch resumes after the last message it had.
        assert await bex.heard(here.table_id, 1, after_seq=mine[1].seq) == [mine[2]]


async def test_spectators_hear_and_talk_only_at_tables_that_allow_them() -> None:
    clock = MovedClock()
    async with talking_stack(clock) as (_, channel):
        ana, zed = Person("ana", channel), Person("zed", channel)
        closed = await ana.host(spectators=False)
        assert await _refused(zed.say(closed.table_id, "hi")) == (
            grpc.StatusCode.PERMISSION_DENIED, "not_at_table")
        assert await _refused(zed.heard(closed.table_id, 1)) == (
            grpc.StatusCode.PERMISSION_DENIED, "not_at_table")
        open_table = await ana.host(spectators=True)
        listener = Listener(ana, open_table.table_id)
        await settle()
        said = await zed.say(open_table.table_id, "go ana")
        await settle()
        assert await listener.stop() == [said]
        assert said.from_spectator and said.sender_id == "zed"
        assert await zed.heard(open_table.table_id, 1) == [said]


async def test_each_refusal_has_its_reason() -> None:
    clock = MovedClock()
    async with talking_stack(clock, chat_max_chars=20) as (_, channel):
        ana, bex = Person("ana", channel), Person("bex", channel)
        table = await ana.host()
        await bex.join(table)
        table_id = table.table_id
        # Length: the limit counts the cleaned text.
        assert (await ana.say(table_id, "x" * 20)).text == "x" * 20
        assert await _refused(ana.say(table_id, "x" * 21)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "chat_too_long")
        # Hostile characters: removed as from display names; nothing visible is refused.
        assert (await ana.say(table_id, "hi\u202e\u200b there\x1b")).text == "hi there"
        assert await _refused(ana.say(table_id, "\u202e\u2066\u200b\u00ad")) == (
            grpc.StatusCode.INVALID_ARGUMENT, "chat_text_invalid")
        assert await _refused(ana.say(table_id, phrase="no_such_phrase")) == (
            grpc.StatusCode.INVALID_ARGUMENT, "unknown_phrase")
        # Rate: 5 in 10 s (two said above); a refused message does not count.
        await ana.say(table_id, "three")
        await ana.say(table_id, "four")
        await ana.say(table_id, phrase="thanks")
        assert await _refused(ana.say(table_id, "six")) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED, "chat_rate_limited")
        assert (await bex.say(table_id, "me too")).text == "me too"  # the rate is per player
        clock.move(10_000)
        assert (await ana.say(table_id, "six")).text == "six"
        # The host's switch: phrases only, then off; only the host may turn it.
        assert await _refused(bex.lobby.SetTableChat(lobby_pb2.SetTableChatRequest(
            table_id=table_id, chat=lobby_pb2.CHAT_MODE_OFF), metadata=bex.metadata)) == (
            grpc.StatusCode.PERMISSION_DENIED, "not_host")
        await ana.lobby.SetTableChat(lobby_pb2.SetTableChatRequest(
            table_id=table_id, chat=lobby_pb2.CHAT_MODE_PHRASES), metadata=ana.metadata)
        assert await _refused(bex.say(table_id, "words")) == (
            grpc.StatusCode.FAILED_PRECONDITION, "chat_phrases_only")
        assert (await bex.say(table_id, phrase="well_played")).phrase_id == "well_played"
        await ana.lobby.SetTableChat(lobby_pb2.SetTableChatRequest(
            table_id=table_id, chat=lobby_pb2.CHAT_MODE_OFF), metadata=ana.metadata)
        assert await _refused(bex.say(table_id, phrase="well_played")) == (
            grpc.StatusCode.FAILED_PRECONDITION, "chat_off")
        # Mute: of oneself refused, and of an id longer than any player's (not stored).
        assert await _refused(ana.chat.MutePlayer(chat_pb2.MutePlayerRequest(
            player_id="ana", muted=True), metadata=ana.metadata)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "cannot_mute_self")
        assert await _refused(ana.chat.MutePlayer(chat_pb2.MutePlayerRequest(
            player_id="g" * 65, muted=True), metadata=ana.metadata)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")


async def test_a_muted_player_is_not_heard_by_whoever_muted_them_only() -> None:
    clock = MovedClock()
    async with talking_stack(clock) as (_, channel):
        ana, bex, zed = Person("ana", channel), Person("bex", channel), Person("zed", channel)
        table = await ana.host(spectators=True)
        await bex.join(table)
        muted = await bex.chat.MutePlayer(chat_pb2.MutePlayerRequest(
            player_id="zed", muted=True), metadata=bex.metadata)
        assert list(muted.muted_player_ids) == ["zed"]
        listeners = [Listener(ana, table.table_id), Listener(bex, table.table_id)]
        await settle()
        rude = await zed.say(table.table_id, "you play badly")
        kind = await ana.say(table.table_id, phrase="sorry")
        await settle()
        heard_ana, heard_bex = [await listener.stop() for listener in listeners]
        assert heard_ana == [rude, kind]
        assert heard_bex == [kind]
        await bex.chat.MutePlayer(chat_pb2.MutePlayerRequest(player_id="zed", muted=False),
                                  metadata=bex.metadata)
        assert await bex.heard(table.table_id, 2) == [rude, kind]


async def test_talk_expires_after_its_age_by_the_moved_clock() -> None:
    clock = MovedClock()
    async with talking_stack(clock, chat_retention_days=7) as (run, channel):
        ana = Person("ana", channel)
        table = await ana.host()
        old = await ana.say(table.table_id, "from last week")
        clock.move(7 * DAY_MS - 1)
        assert await ana.heard(table.table_id, 1) == [old]  # still kept, just
        clock.move(2)
        new = await ana.say(table.table_id, "today")
        assert await ana.heard(table.table_id, 1) == [new]
        assert run.stack.table_talk is not None
        clock.move(7 * DAY_MS + 1)
        assert await run.stack.table_talk.expire() == 1


async def test_a_deleted_accounts_talk_is_erased_at_every_table() -> None:
    clock = MovedClock()
    async with talking_stack(clock) as (run, channel):
        ana, zed = Person("ana", channel), Person("zed", channel)
        tables = [await ana.host(spectators=True) for _ in range(2)]
        kept = [await ana.say(table.table_id, "hello") for table in tables]
        for table in tables:
            await zed.say(table.table_id, "my phone number is ...")
        # The accounts service publishes the deletion on the ban list every server reads.
        await run.stack.bans.publish("zed", erased_entry())
        for _ in range(50):
            heard = [await ana.heard(table.table_id, 1) for table in tables]
            left = [message for table in tables
                    for message in await _all_kept(run, table.table_id)]
            if left == kept:
                break
            await settle(0.1)
        assert heard == [[kept[0]], [kept[1]]]
        assert left == kept


async def _all_kept(run: Running, table_id: str) -> list[chat_pb2.ChatMessage]:
    talk = run.stack.talk
    assert isinstance(talk, MemoryTalkLog)
    return talk.kept(table_id)


async def test_the_quick_phrases_have_three_languages_and_stable_ids() -> None:
    clock = MovedClock()
    async with talking_stack(clock) as (_, channel):
        ana = Person("ana", channel)
        reply = await ana.chat.ListPhrases(chat_pb2.ListPhrasesRequest(),
                                           metadata=ana.metadata)
    assert [p.phrase_id for p in reply.phrases] == [p.phrase_id for p in PHRASES]
    assert all(p.fa and p.ar and p.en for p in reply.phrases)
    assert reply.phrases[0] == chat_pb2.QuickPhrase(phrase_id="hello", fa="سلام",
                                                    ar="السلام عليكم", en="Hello")


def test_the_client_guide_lists_every_quick_phrase_with_its_texts() -> None:
    guide = (Path(__file__).resolve().parents[3] / "docs" / "clients.md").read_text(
        encoding="utf-8")
    for phrase in PHRASES:
        assert f"| `{phrase.phrase_id}` | {phrase.fa} | {phrase.ar} | {phrase.en} |" in guide
