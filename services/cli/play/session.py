"""The terminal client's connection: blocking lobby and game calls, and a game stream thread.

The player signs in through the accounts service (:mod:`services.cli.play.credentials`),
whose interceptor puts the session's access token on every lobby, game and tournament call
and refreshes it by itself.

The match goes over one ``GameService.Play`` stream (docs/clients.md "Play stream"): a daemon
thread reads it and puts each event on a queue, and the player's commands go on it, each
waiting for its outcome. Keeping it open is also what tells the server the player is present
(a dropped stream lets a bot take the seat after the grace period; opening it again takes it
back). A stream that drops is opened again (:meth:`Session.follow`) after the last seq
received, with the commands still without an outcome sent again under their own ids; one
silent for :data:`SILENCE_SECONDS` (the server sends a heartbeat every 5 s) is cancelled and
opened again; the access token is renewed on the stream when the session refreshes it. With
``receipts_template`` set, every chain hash the stream carries is kept in a receipts file per
match (:mod:`services.cli.play.receipts`), written by the stream's thread as it arrives
rather than when the prompt gets to print it.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import grpc

from dast.v1 import accounts_pb2_grpc, game_pb2, game_pb2_grpc, lobby_pb2, lobby_pb2_grpc, log_pb2
from engine.core.payload import put
from engine.registry import GAMES_BY_NAME
from services.cli.play.credentials import Credentials
from services.cli.play.receipts import ReceiptsFile, receipts_path
from services.platform.channels import CHANNEL_OPTIONS
from services.platform.errors import retry_after_in

STREAM_ENDED = None
"""Queued when the game stream ends (the match is over, or the connection dropped)."""
SILENCE_SECONDS: Final = 10.0
"""A Play stream that says nothing this long (two of the server's heartbeats) is dead."""
OUTCOME_SECONDS: Final = 20.0
"""How long a command waits for its outcome (across streams opened again) before the
prompt gives up on it."""


class CommandRefused(grpc.RpcError):  # type: ignore[misc]
    """A command's outcome on the Play stream was a refusal (the status a call would end
    with); read like the error of a call."""

    def __init__(self, outcome: game_pb2.PlayOutcome) -> None:
        super().__init__(outcome.status.message)
        self.outcome = outcome

    def code(self) -> grpc.StatusCode:
        return next((code for code in grpc.StatusCode
                     if code.value[0] == self.outcome.status.code), grpc.StatusCode.UNKNOWN)

    def details(self) -> str:
        return str(self.outcome.status.message)


@dataclass
class _Waiting:
    """A command sent on the Play stream, until its outcome arrives."""

    command: game_pb2.PlayCommand
    answered: threading.Event = field(default_factory=threading.Event)
    outcome: game_pb2.PlayOutcome | None = None


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
    _requests: queue.Queue[game_pb2.PlayRequest | None] | None = field(init=False, default=None)
    _waiting: dict[str, _Waiting] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
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
        """Act for this seat at ``seq`` on the match's Play stream (command id
        ``<player>:<seq>`` makes resends safe: the server applies it once) and wait for its
        outcome; its events come on the stream first.

        :raises CommandRefused: the outcome was a refusal (its status and message).
        :raises TimeoutError: no outcome within :data:`OUTCOME_SECONDS`.
        """
        request = game_pb2.PlayCommand(command_id=f"{self.player_id}:{seq}", expected_seq=seq)
        put(request, GAMES_BY_NAME[game].SCHEMA, command)
        waiting = _Waiting(request)
        with self._lock:
            self._waiting[request.command_id] = waiting
            if self._requests is not None:
                self._requests.put(game_pb2.PlayRequest(command=request))
        try:
            if not waiting.answered.wait(OUTCOME_SECONDS) or waiting.outcome is None:
                raise TimeoutError(f"no outcome for the move in {OUTCOME_SECONDS:.0f} s")
        finally:
            with self._lock:
                self._waiting.pop(request.command_id, None)
        if waiting.outcome.status.code != 0:
            raise CommandRefused(waiting.outcome)

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
        """Open the match's Play stream after ``after_seq`` and read it into :attr:`events`
        from a daemon thread, which opens it again after the last seq received whenever it
        drops; :data:`STREAM_ENDED` is queued once it ends after the match's final event."""
        self.unfollow()
        receipts = self.receipts_of(game_id)
        heard = [time.monotonic()]
        last_seq = [after_seq]
        stream = self._open_play(game_id, after_seq, heard)

        def pump() -> None:
            current = stream
            while True:
                try:
                    for reply in current:
                        heard[0] = time.monotonic()
                        kind = reply.WhichOneof("kind")
                        if kind == "event":
                            last_seq[0] = reply.event.event.seq
                            if receipts is not None:
                                receipts.record(reply.event.event.seq, reply.event.hash)
                            self.events.put(reply.event.event)
                        elif kind == "outcome":
                            self._answer(reply.outcome)
                    break  # the match is over
                except grpc.RpcError:
                    if self._stream is not current:
                        break  # closed by the prompt (unfollow)
                time.sleep(0.5)
                with contextlib.suppress(grpc.RpcError):
                    heard[0] = time.monotonic()
                    current = self._open_play(game_id, last_seq[0], heard)
            self.events.put(STREAM_ENDED)

        threading.Thread(target=pump, name="dast-play-stream", daemon=True).start()

    def _open_play(self, game_id: str, after_seq: int, heard: list[float]) -> Any:
        """A Play stream after ``after_seq``, the commands still without an outcome sent on
        it again (same command ids)."""
        requests: queue.Queue[game_pb2.PlayRequest | None] = queue.Queue()
        requests.put(game_pb2.PlayRequest(open=game_pb2.PlayOpen(
            game_id=game_id, after_seq=after_seq)))
        with self._lock:
            for waiting in self._waiting.values():
                requests.put(game_pb2.PlayRequest(command=waiting.command))
            if self._requests is not None:
                self._requests.put(None)
            self._requests = requests
        stream = self.game.Play(self._sent(requests, heard, self.credentials.access_token()))
        self._stream = stream
        return stream

    def _sent(self, requests: queue.Queue[game_pb2.PlayRequest | None], heard: list[float],
              token: str) -> Iterator[game_pb2.PlayRequest]:
        """What the stream sends: the queued requests, a renewal whenever the session's
        access token changed, and, once the stream has been silent too long, its end."""
        while True:
            try:
                request = requests.get(timeout=1.0)
            except queue.Empty:
                if time.monotonic() - heard[0] > SILENCE_SECONDS and self._stream is not None:
                    self._stream.cancel()  # dead: the prompt opens it again
                    return
                with contextlib.suppress(grpc.RpcError):
                    fresh = self.credentials.access_token()
                    if fresh != token:
                        token = fresh
                        yield game_pb2.PlayRequest(renewal=game_pb2.PlayRenewal(
                            access_token=fresh))
                continue
            if request is None:
                return
            yield request

    def _answer(self, outcome: game_pb2.PlayOutcome) -> None:
        """A command's outcome arrived: wake the prompt waiting for it (a refusal worth a
        retry, a limit or the store away, is sent again after its delay instead)."""
        with self._lock:
            waiting = self._waiting.get(outcome.command_id)
            requests = self._requests
        if waiting is None:
            return
        retryable = outcome.status.code in (grpc.StatusCode.UNAVAILABLE.value[0],
                                            grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])
        if retryable and requests is not None:
            delay = retry_after_in(outcome.status) or 0.5  # none given: soon
            threading.Timer(delay, requests.put,
                            [game_pb2.PlayRequest(command=waiting.command)]).start()
            return
        waiting.outcome = outcome
        waiting.answered.set()

    def unfollow(self) -> None:
        """Close the game stream, if any."""
        with self._lock:
            if self._requests is not None:
                self._requests.put(None)
                self._requests = None
        stream, self._stream = self._stream, None  # first: the reader must not reopen it
        if stream is not None:
            stream.cancel()

    def close(self) -> None:
        """Close the stream, the receipts file and the channels."""
        self.unfollow()
        if self.receipts is not None:
            self.receipts.close()
        for channel in self._raw_channels:
            channel.close()

