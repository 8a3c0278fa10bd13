"""The terminal client's connection: blocking lobby and game calls, and a game stream thread.

The player signs in through the accounts service (:mod:`services.cli.play.credentials`),
whose interceptor puts the session's access token on every lobby, game and tournament call
and refreshes it by itself.

The Subscribe stream runs in a daemon thread that puts each event on a queue; keeping it open
is also what tells the server the player is present (a dropped stream lets a bot take the
seat after the grace period; subscribing again takes it back). With ``receipts_template``
set, every chain hash the server sends (stream and SubmitCommand replies) is kept in a
receipts file per match (:mod:`services.cli.play.receipts`), written by the stream's thread
as it arrives rather than when the prompt gets to print it.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import grpc

from dast.v1 import accounts_pb2_grpc, game_pb2, game_pb2_grpc, lobby_pb2, lobby_pb2_grpc, log_pb2
from engine.core.payload import put
from engine.registry import GAMES_BY_NAME
from services.cli.play.credentials import Credentials
from services.cli.play.receipts import ReceiptsFile, receipts_path
from services.platform.channels import CHANNEL_OPTIONS

STREAM_ENDED = None
"""Queued when the game stream ends (the match is over, or the connection dropped)."""


@dataclass
class Session:
    """A signed-in player talking to a dast lobby and game service.

    ``target`` serves the lobby, and the game service too unless ``game_target`` names it
    apart (in a deployment of separate processes; it may list several replicas, which the
    client balances: :mod:`services.platform.channels`), and the accounts service unless
    ``accounts_target`` does. ``receipts_template`` (the ``--receipts`` path, empty for
    none) is where the seat's receipts are kept.
    """

    target: str
    game_target: str = ""
    accounts_target: str = ""
    receipts_template: str = ""
    credentials: Credentials = field(init=False)
    """The session's tokens, and the interceptor of every channel but the accounts one."""
    channel: grpc.Channel = field(init=False)
    game_channel: grpc.Channel = field(init=False)
    lobby: lobby_pb2_grpc.LobbyServiceStub = field(init=False)
    game: game_pb2_grpc.GameServiceStub = field(init=False)
    events: queue.Queue[log_pb2.Event | None] = field(default_factory=queue.Queue)
    receipts: ReceiptsFile | None = field(init=False, default=None)
    """The receipts file of the match followed last (None without ``receipts_template``)."""
    _receipts_game: str = field(init=False, default="")
    _stream: Any = field(init=False, default=None)
    _raw_channels: list[grpc.Channel] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        lobby = self._open(self.target)
        accounts = (self._open(self.accounts_target)
                    if self.accounts_target and self.accounts_target != self.target else lobby)
        # Sign-ins and refreshes carry no access token: the accounts stub's channel is bare.
        self.credentials = Credentials(accounts_pb2_grpc.AccountsServiceStub(accounts))
        self.channel = self.authorized(lobby)
        self.game_channel = (
            self.authorized(self._open(self.game_target))
            if self.game_target and self.game_target != self.target else self.channel
        )
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self.game = game_pb2_grpc.GameServiceStub(self.game_channel)

    def _open(self, target: str) -> grpc.Channel:
        channel = grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
        self._raw_channels.append(channel)
        return channel

    def authorized(self, channel: grpc.Channel) -> grpc.Channel:
        """``channel`` with the session's access token on every call."""
        return grpc.intercept_channel(channel, self.credentials)

    @property
    def player_id(self) -> str:
        return self.credentials.player_id

    @property
    def display_name(self) -> str:
        return self.credentials.display_name

    def sign_in(self, device_id: str, display_name: str, device_secret: str = "") -> str:
        """Sign in as the guest of ``device_id`` (with its secret, after its first sign-in);
        the device secret a first sign-in returns, "" otherwise.

        :raises grpc.RpcError: as the accounts service answers.
        """
        return self.credentials.sign_in_guest(device_id, device_secret, display_name)

    def call(self, method: str, request: Any) -> Any:
        """Call a lobby or game method by name.

        :raises grpc.RpcError: as the server answers.
        """
        stub = self.lobby if hasattr(self.lobby, method) else self.game
        return getattr(stub, method)(request, timeout=20)

    def table_of_game(self, game_id: str) -> lobby_pb2.Table | None:
        """The lobby's table of a match (None when the match has no table)."""
        try:
            reply: lobby_pb2.GetTableResponse = self.call(
                "GetTable", lobby_pb2.GetTableRequest(game_id=game_id)
            )
        except grpc.RpcError:
            return None
        return reply.table

    def view(self, game_id: str) -> game_pb2.GetViewResponse:
        """This seat's view."""
        reply: game_pb2.GetViewResponse = self.call(
            "GetView", game_pb2.GetViewRequest(game_id=game_id)
        )
        return reply

    def submit(self, game_id: str, game: str, command: Any, seq: int) -> None:
        """Act for this seat at ``seq`` (command id ``<player>:<seq>`` makes retries safe).

        :raises grpc.RpcError: as the game service answers.
        """
        request = game_pb2.SubmitCommandRequest(
            game_id=game_id, command_id=f"{self.player_id}:{seq}", expected_seq=seq
        )
        put(request, GAMES_BY_NAME[game].SCHEMA, command)
        reply: game_pb2.SubmitCommandResponse = self.call("SubmitCommand", request)
        receipts = self.receipts_of(game_id)
        if receipts is not None:
            receipts.record_reply(reply.events, reply.hashes)

    def receipts_of(self, game_id: str) -> ReceiptsFile | None:
        """The receipts file of ``game_id``, opened on its first use (None when the player
        keeps no receipts); the previous match's file is closed then.

        :raises services.cli.play.receipts.ReceiptsError: as :class:`ReceiptsFile`.
        """
        if not self.receipts_template:
            return None
        if self.receipts is None or self._receipts_game != game_id:
            first_match = not self._receipts_game
            if self.receipts is not None:
                self.receipts.close()
            path = receipts_path(self.receipts_template, game_id, first_match=first_match)
            self.receipts, self._receipts_game = ReceiptsFile(path), game_id
        return self.receipts

    def follow(self, game_id: str, after_seq: int = 0) -> None:
        """Stream the game's events into :attr:`events` from a daemon thread."""
        self.unfollow()
        receipts = self.receipts_of(game_id)
        stream = self.game.Subscribe(
            game_pb2.SubscribeRequest(game_id=game_id, after_seq=after_seq))
        self._stream = stream

        def pump() -> None:
            with contextlib.suppress(grpc.RpcError):
                for reply in stream:
                    if receipts is not None:
                        receipts.record(reply.event.seq, reply.hash)
                    self.events.put(reply.event)
            self.events.put(STREAM_ENDED)

        threading.Thread(target=pump, name="dast-play-stream", daemon=True).start()

    def unfollow(self) -> None:
        """Close the game stream, if any."""
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None

    def close(self) -> None:
        """Close the stream, the receipts file and the channels."""
        self.unfollow()
        if self.receipts is not None:
            self.receipts.close()
        for channel in self._raw_channels:
            channel.close()
