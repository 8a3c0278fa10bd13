"""What one game service replica has done since it started (``GetServerStatus``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import grpc

from dast.v1 import game_pb2

SERVER_FAILURES: Final = frozenset({
    grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DATA_LOSS,
})
"""The statuses of a command that failed on the server's side rather than being refused."""


@dataclass
class ServiceCounts:
    """The replica's counters (plain integers: one event loop updates them)."""

    started_at_ms: int
    commands_accepted: int = 0
    commands_refused: int = 0
    commands_failed: int = 0
    events_appended: int = 0
    open_subscriptions: int = 0
    open_play_streams: int = 0

    def refusal(self, code: grpc.StatusCode) -> None:
        """Count a command that did not go through, as refused or failed by ``code``."""
        if code in SERVER_FAILURES:
            self.commands_failed += 1
        else:
            self.commands_refused += 1

    def status(self) -> game_pb2.GetServerStatusResponse:
        """The counters as ``GetServerStatus`` answers them."""
        return game_pb2.GetServerStatusResponse(
            started_at_ms=self.started_at_ms, commands_accepted=self.commands_accepted,
            commands_refused=self.commands_refused, commands_failed=self.commands_failed,
            events_appended=self.events_appended, open_subscriptions=self.open_subscriptions,
            open_play_streams=self.open_play_streams)
