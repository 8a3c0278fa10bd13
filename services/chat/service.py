"""The gRPC ``dast.v1.ChatService`` (chat.proto): table talk among a table's people.

A servicer method is a few lines: who calls, which table (:class:`TableDirectory`), whether
they are among its people and what its talk allows, then the talk log
(:mod:`services.chat.talk_log`). Messages carry the sender's opaque player id, never a
name: an app shows the name it has from the table's seats.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from dast.v1 import chat_pb2, chat_pb2_grpc, lobby_pb2
from services.chat.phrases import PHRASES, PHRASES_BY_ID
from services.chat.reasons import ChatReason
from services.chat.rules import TalkRules, clean_text
from services.chat.send_rate import send_rate_of
from services.chat.store import LARGEST_NUMBER, PLAYER_ID_CHARS, ChatStore
from services.chat.tables import TableDirectory, TableFacts
from services.chat.talk_log import TalkLog, TalkUnavailable
from services.platform.auth import current_identity
from services.platform.clock import Clock, wall_clock_ms
from services.platform.errors import Reason, ServiceError
from services.platform.limits import admit_spectator
from services.platform.validation import check_id, quoted_input

MEMBERSHIP_CHECK_MS = 5_000
"""How often a watch checks again that its player is still among the table's people."""
RETRY_SECONDS = 1.0
"""The RetryInfo delay of a call that found the talk unreachable."""


def _unavailable(failed: TalkUnavailable) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAVAILABLE, ChatReason.CHAT_UNAVAILABLE,
                        "table talk is unreachable for a moment; retry",
                        retry_after=RETRY_SECONDS)


async def find_table(directory: TableDirectory, table_id: str, game_id: str) -> TableFacts:
    """The table named by ``table_id``, or else by the match ``game_id`` it plays.

    :raises ServiceError: INVALID_ARGUMENT when neither is given, NOT_FOUND
        ``table_not_found`` when no table is found.
    """
    if table_id:
        facts = await directory.table(check_id(table_id, "table_id"))
    elif game_id:
        facts = await directory.table_of_game(check_id(game_id, "game_id"))
    else:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                           "table_id or game_id is required", metadata={"field": "table_id"})
    if facts is None:
        raise ServiceError(grpc.StatusCode.NOT_FOUND, ChatReason.TABLE_NOT_FOUND,
                           f"no table {quoted_input(table_id or game_id)}")
    return facts


def _not_at_table(facts: TableFacts) -> ServiceError:
    return ServiceError(grpc.StatusCode.PERMISSION_DENIED, ChatReason.NOT_AT_TABLE,
                        f"you do not sit at table {quoted_input(facts.table_id)}, and it "
                        "takes no spectators")


class ChatService(chat_pb2_grpc.ChatServiceServicer):
    """The servicer."""

    def __init__(self, directory: TableDirectory, talk: TalkLog, store: ChatStore,
                 rules: TalkRules, *, clock: Clock = wall_clock_ms) -> None:
        self.directory = directory
        self.talk = talk
        self.store = store
        self.rules = rules
        self.clock = clock
        self.windows = send_rate_of(talk, rules.messages, rules.window_ms)

    async def SendChat(
        self, request: chat_pb2.SendChatRequest, context: grpc.aio.ServicerContext
    ) -> chat_pb2.SendChatResponse:
        player = current_identity().player_id
        facts = await find_table(self.directory, request.table_id, request.game_id)
        if not facts.may_watch(player):
            raise _not_at_table(facts)
        message = chat_pb2.ChatMessage(table_id=facts.table_id, sender_id=player,
                                       from_spectator=player not in facts.seated)
        self._set_body(message, request, facts.chat)
        try:
            await self.windows.take(player, self.clock())
        except TalkUnavailable as failed:
            raise _unavailable(failed) from failed
        message.at_ms = self.clock()
        try:
            kept = await self.talk.append(message)
        except TalkUnavailable as failed:
            raise _unavailable(failed) from failed
        return chat_pb2.SendChatResponse(message=kept)

    def _set_body(self, message: chat_pb2.ChatMessage, request: chat_pb2.SendChatRequest,
                  mode: lobby_pb2.ChatMode.ValueType) -> None:
        """Put the request's phrase or text on ``message`` if the table's ``mode`` allows it.

        :raises ServiceError: ``chat_off``, ``chat_phrases_only``, ``unknown_phrase`` and
            the text's refusals (:func:`clean_text`).
        """
        if mode == lobby_pb2.CHAT_MODE_OFF:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, ChatReason.CHAT_OFF,
                               "the host has turned this table's talk off")
        body = request.WhichOneof("body")
        if body == "phrase_id":
            if request.phrase_id not in PHRASES_BY_ID:
                raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT,
                                   ChatReason.UNKNOWN_PHRASE,
                                   f"no quick phrase {quoted_input(request.phrase_id)}",
                                   metadata={"field": "phrase_id"})
            message.phrase_id = request.phrase_id
        elif mode == lobby_pb2.CHAT_MODE_PHRASES:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                               ChatReason.CHAT_PHRASES_ONLY,
                               "this table allows quick phrases only")
        else:
            message.text = clean_text(request.text, self.rules.max_chars)

    async def WatchChat(
        self, request: chat_pb2.WatchChatRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[chat_pb2.WatchChatResponse]:
        player = current_identity().player_id
        facts = await find_table(self.directory, request.table_id, request.game_id)
        if not facts.may_watch(player):
            raise _not_at_table(facts)
        if request.after_seq > LARGEST_NUMBER:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                               f"after_seq must be at most {LARGEST_NUMBER}",
                               metadata={"field": "after_seq"})
        if player not in facts.seated:
            admit_spectator(f"table:{facts.table_id}")
        try:
            async for response in self._follow(facts, player, request.after_seq):
                yield response
        except TalkUnavailable as failed:
            raise _unavailable(failed) from failed

    async def _follow(self, facts: TableFacts, player: str, after_seq: int
                      ) -> AsyncIterator[chat_pb2.WatchChatResponse]:
        """The table's messages for ``player``: muted senders left out, and the watch ended
        once they are no longer among the table's people."""
        checked_ms = self.clock()
        async for message in self.talk.watch(facts.table_id, after_seq):
            if self.clock() - checked_ms >= MEMBERSHIP_CHECK_MS:
                facts = await find_table(self.directory, facts.table_id, "")
                if not facts.may_watch(player):
                    raise _not_at_table(facts)
                checked_ms = self.clock()
            if message.sender_id != player and message.sender_id in await asyncio.to_thread(
                    self.store.muted_by, player):
                continue
            yield chat_pb2.WatchChatResponse(message=message)

    async def MutePlayer(
        self, request: chat_pb2.MutePlayerRequest, context: grpc.aio.ServicerContext
    ) -> chat_pb2.MutePlayerResponse:
        player = current_identity().player_id
        muted_id = check_id(request.player_id, "player_id", max_chars=PLAYER_ID_CHARS)
        if muted_id == player:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, ChatReason.CANNOT_MUTE_SELF,
                               "you cannot mute yourself", metadata={"field": "player_id"})
        muted = await asyncio.to_thread(self.store.set_muted, player, muted_id,
                                        request.muted, self.clock())
        return chat_pb2.MutePlayerResponse(muted_player_ids=muted)

    async def ListPhrases(
        self, request: chat_pb2.ListPhrasesRequest, context: grpc.aio.ServicerContext
    ) -> chat_pb2.ListPhrasesResponse:
        return chat_pb2.ListPhrasesResponse(phrases=[
            chat_pb2.QuickPhrase(phrase_id=phrase.phrase_id, fa=phrase.fa, ar=phrase.ar,
                                 en=phrase.en) for phrase in PHRASES])
