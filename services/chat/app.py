"""Wiring of table talk and reports into a gRPC server, and their expiry.

They run beside the lobby, in its process (docs/architecture.md "Table talk and reports"
says why): the composition root (:mod:`services.compose`) mounts them with
:func:`mount_table_talk` wherever it mounts the lobby, handing them a
:class:`~services.chat.tables.TableDirectory` over the lobby's tables, then runs
:meth:`TableTalk.run`::

    talk = mount_table_talk(server, directory, ChatStore.open(url), open_talk_log(...),
                            rules=TalkRules(...), report_retention_days=90)
    task = asyncio.create_task(talk.run())
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Final

import grpc
import structlog

from dast.v1 import chat_pb2, chat_pb2_grpc, reports_pb2, reports_pb2_grpc
from services.chat.reports import ReportService
from services.chat.rules import TalkRules
from services.chat.service import ChatService
from services.chat.store import ChatStore
from services.chat.tables import TableDirectory
from services.chat.talk_log import DAY_MS, MemoryTalkLog, TalkLog
from services.platform.background import BackgroundTasks
from services.platform.bans import Ban
from services.platform.clock import Clock, wall_clock_ms

CHAT_SERVICE_NAME = chat_pb2.DESCRIPTOR.services_by_name["ChatService"].full_name
REPORT_SERVICE_NAME = reports_pb2.DESCRIPTOR.services_by_name["ReportService"].full_name
SERVICE_NAMES = (CHAT_SERVICE_NAME, REPORT_SERVICE_NAME)
EXPIRY_SECONDS: Final = 3600.0
"""How often expired reports (and, in memory, expired talk) are deleted."""
_log = structlog.get_logger(component="chat")


@dataclass
class TableTalk:
    """Table talk and reports of one process."""

    chat: ChatService
    reports: ReportService
    talk: TalkLog
    _erasures: BackgroundTasks = field(default_factory=BackgroundTasks, repr=False)

    def on_ban(self, player_id: str, ban: Ban | None) -> None:
        """A :data:`~services.platform.bans.BanListener`: a deleted account's talk is erased
        at every table (in the background; each lobby process does it, which changes nothing
        the second time)."""
        if ban is None or not ban.erased:
            return
        self._erasures.spawn(self._erase(player_id), name=f"chat-erase:{player_id}")

    async def _erase(self, player_id: str) -> None:
        try:
            await self.talk.erase_sender(player_id)
        except Exception:
            _log.exception("talk_not_erased", player_id=player_id)
        else:
            _log.info("talk_erased", player_id=player_id)

    async def expire(self) -> int:
        """Delete the reports (and talk kept in memory) older than their ages; how many
        went. JetStream expires the stream's talk by itself."""
        gone = await self.reports.delete_expired()
        if isinstance(self.talk, MemoryTalkLog):
            gone += self.talk.expire()
        return gone

    async def run(self, period_seconds: float = EXPIRY_SECONDS) -> None:
        """:meth:`expire` now and every ``period_seconds``, forever."""
        while True:
            try:
                gone = await self.expire()
                if gone:
                    _log.info("expired", reports_and_messages=gone)
            except Exception:
                _log.exception("expiry_failed")
            await asyncio.sleep(period_seconds)


def mount_table_talk(server: grpc.aio.Server, directory: TableDirectory, store: ChatStore,
                     talk: TalkLog, *, rules: TalkRules | None = None,
                     report_retention_days: float = 90.0,
                     clock: Clock = wall_clock_ms) -> TableTalk:
    """Add ``dast.v1.ChatService`` and ``dast.v1.ReportService`` to ``server``: talk kept in
    ``talk`` under ``rules``, tables found in ``directory``, reports and mutes in ``store``
    (reports kept ``report_retention_days``). Start ``talk`` before serving."""
    chat = ChatService(directory, talk, store, rules or TalkRules(), clock=clock)
    reports = ReportService(directory, store, retention_ms=int(report_retention_days * DAY_MS),
                            clock=clock)
    chat_pb2_grpc.add_ChatServiceServicer_to_server(chat, server)
    reports_pb2_grpc.add_ReportServiceServicer_to_server(reports, server)
    return TableTalk(chat, reports, talk)
