"""A whole Hokm match played by a client of the public API, as docs/clients.md describes.

Run it against a server (``make run`` prints the address)::

    .venv/bin/python docs/examples/play_hokm.py 127.0.0.1:50051

It signs in as a guest of the accounts service (a new device id each run, so no device
secret to keep: an app stores the one the first sign-in returns), opens a four-player table,
starts it (bots take the other three seats), subscribes to the match and plays a legal move
from its view whenever its seat is to act, until the stream ends with the match's final
event. Half-way through it drops the stream and reconnects with ``after_seq``, as an app
does after losing the network. Every event's hash is kept as a receipt (``dast verify
--receipts``), and the offset between the server's clock and this machine's is estimated
from the replies' timing.

tests/e2e/test_client_example.py runs this file against an embedded server.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from base64 import b64encode
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    hokm_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
)

SET_ASIDE_COUNT = 4
"""Three-player Hokm: the hakem lays exactly 4 of the listed cards aside."""


@dataclass
class ServerClock:
    """The server's clock as seen from here: ``offset_ms`` = server time - local time.

    Each reply's ``server_time_ms`` was stamped between the moment the call left and the
    moment its answer came back, so the offset lies within half the round trip of
    ``server_time_ms - midpoint``. The sample with the shortest round trip is
    the tightest, so it is the one kept.
    """

    offset_ms: float = 0.0
    uncertainty_ms: float = float("inf")

    def observe(self, server_ms: int, sent_ms: float, received_ms: float) -> None:
        half_round_trip = (received_ms - sent_ms) / 2
        if half_round_trip < self.uncertainty_ms:
            self.offset_ms = server_ms - (sent_ms + half_round_trip)
            self.uncertainty_ms = half_round_trip

    def local_ms(self, server_ms: int) -> float:
        """A server time (a ``deadline_ms``) on this machine's clock."""
        return server_ms - self.offset_ms


def now_ms() -> float:
    return time.time() * 1000


@dataclass
class MatchRecord:
    """What the client kept of a match: its receipts, and how the match went."""

    game_id: str = ""
    player_id: str = ""
    seat: int = 0
    last_seq: int = 0
    receipts: list[tuple[int, bytes]] = field(default_factory=list)
    moves_played: int = 0
    reconnections: int = 0
    retried_stale: int = 0
    get_views: int = 0
    """GetView calls: one per (re)connection; the stream says whose turn it is after that."""
    decided_seq: int = -1
    """The seq of the last state this seat decided a move from (never decide twice)."""
    clock: ServerClock = field(default_factory=ServerClock)
    final_view: hokm_pb2.HokmView | None = None

    def write_receipts(self, path: Path) -> None:
        """The receipts in the JSON Lines form ``dast verify --receipts`` reads."""
        lines = [json.dumps({"seq": seq, "hash": b64encode(digest).decode()})
                 for seq, digest in self.receipts]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def error_reason(error: grpc.RpcError) -> str:
    """The ``google.rpc.ErrorInfo.reason`` a failed call carries ("" if none)."""
    status = rpc_status.from_call(error)
    for detail in status.details if status else []:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


def chosen_move(view: hokm_pb2.HokmView) -> hokm_pb2.HokmCommand:
    """A legal command of the view: the first one listed (a real app lets the player pick).

    In the set-aside phase the view lists one SetAsideCards holding the whole hand to choose
    from, so the client picks 4 of them."""
    move = hokm_pb2.HokmCommand()
    move.CopyFrom(view.legal[0])
    if move.WhichOneof("kind") == "set_aside_cards":
        del move.set_aside_cards.cards[SET_ASIDE_COUNT:]
    return move


class HokmClient:
    """One guest's lobby and game calls, each carrying its bearer token."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        self.game = game_pb2_grpc.GameServiceStub(channel)
        self.metadata: tuple[tuple[str, str], ...] = ()

    async def sign_in(self, device_id: str) -> str:
        """Sign the device in as a guest (its first sign-in: an app keeps the returned
        ``device_secret`` and sends it with every later one; a match of a few minutes ends
        long before the access token, so this example never calls Refresh)."""
        reply = await self.accounts.SignInGuest(
            accounts_pb2.AccountsServiceSignInGuestRequest(device_id=device_id))
        self.metadata = (("authorization", f"Bearer {reply.tokens.access_token}"),)
        return str(reply.player_id)

    async def start_table_with_bots(self, target_score: int) -> lobby_pb2.Table:
        settings = lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM, target_score=target_score,
            bot_level=lobby_pb2.BOT_LEVEL_RANDOM,
            hokm=hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS),
        )
        table = (await self.lobby.CreateTable(
            lobby_pb2.CreateTableRequest(settings=settings), metadata=self.metadata)).table
        started: lobby_pb2.Table = (await self.lobby.StartGame(
            lobby_pb2.StartGameRequest(table_id=table.table_id), metadata=self.metadata)).table
        return started

    async def play(self, record: MatchRecord, seq: int, view: hokm_pb2.HokmView) -> None:
        """Submit a legal move decided from ``view``, the seat's view after event ``seq``
        (a stream message or a GetView answer whose ``turn.your_turn`` is set).

        The command carries ``expected_seq`` (``seq``) so that it cannot apply to a state
        the player has not seen, and a fresh ``command_id`` so that a retry of the same
        attempt is idempotent. ABORTED means the log moved on: the stream brings the newer
        state with its own ``turn``, and the move is decided again from there."""
        if seq <= record.decided_seq or not view.legal:
            return  # decided from this state already (the GetView and the stream agree)
        record.decided_seq = seq
        request = game_pb2.SubmitCommandRequest(
            game_id=record.game_id, command_id=str(uuid.uuid4()), expected_seq=seq,
            hokm=chosen_move(view))
        sent = now_ms()
        try:
            answer = await self.submit_with_retries(request)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.ABORTED:
                raise
            record.retried_stale += 1
            return
        record.clock.observe(answer.server_time_ms, sent, now_ms())
        record.moves_played += 1

    async def play_if_my_turn(self, record: MatchRecord) -> None:
        """At (re)connection: load the view once and play when this seat is to act (the
        stream has nothing to send until someone acts, and that someone may be us)."""
        reply = await self.game.GetView(
            game_pb2.GetViewRequest(game_id=record.game_id), metadata=self.metadata)
        record.get_views += 1
        if reply.turn.your_turn:
            await self.play(record, reply.seq, reply.hokm)

    async def submit_with_retries(
        self, request: game_pb2.SubmitCommandRequest, attempts: int = 3
    ) -> game_pb2.SubmitCommandResponse:
        """SubmitCommand, resent with the same ``command_id`` when the network fails: the
        server applies the command once and answers a repeat with the first attempt's
        events (``duplicate``). RESOURCE_EXHAUSTED waits as long as RetryInfo says."""
        for attempt in range(attempts):
            try:
                answer: game_pb2.SubmitCommandResponse = await self.game.SubmitCommand(
                    request, metadata=self.metadata, timeout=10)
                return answer
            except grpc.aio.AioRpcError as error:
                last_attempt = attempt == attempts - 1
                if error.code() == grpc.StatusCode.UNAVAILABLE and not last_attempt:
                    await asyncio.sleep(0.2 * 2 ** attempt)
                    continue
                if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and not last_attempt:
                    await asyncio.sleep(retry_delay_seconds(error) or 1.0)
                    continue
                raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def follow(self, record: MatchRecord, *, drop_after_events: int | None) -> bool:
        """Stream the match's events after ``record.last_seq``, acting when it is our turn.

        Returns True when the stream ended with the match (the server closes it after the
        final event), False when this client dropped it after ``drop_after_events``."""
        stream = self.game.Subscribe(
            game_pb2.SubscribeRequest(game_id=record.game_id, after_seq=record.last_seq),
            metadata=self.metadata)
        received = 0
        try:
            await self.play_if_my_turn(record)
            async for message in stream:
                event = message.event
                # After a reconnection the stream resumes exactly after last_seq.
                assert event.seq == record.last_seq + 1, "events arrive in order, once"
                record.last_seq = event.seq
                record.receipts.append((event.seq, bytes(message.hash)))
                received += 1
                if drop_after_events is not None and received >= drop_after_events:
                    return False
                # The last event of each batch says whose turn it is; ours comes with the
                # seat's view, so no GetView is needed after an event.
                if message.turn.your_turn:
                    await self.play(record, event.seq, message.hokm)
            return True
        finally:
            stream.cancel()


def retry_delay_seconds(error: grpc.RpcError) -> float | None:
    """The ``google.rpc.RetryInfo`` delay a RESOURCE_EXHAUSTED answer carries, if any."""
    status = rpc_status.from_call(error)
    for detail in status.details if status else []:
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(retry):
            return float(retry.retry_delay.ToNanoseconds()) / 1e9
    return None


async def play_hokm(address: str, *, device_id: str = "", target_score: int = 3,
                    drop_after_events: int = 40) -> MatchRecord:
    """Play one four-player Hokm match against bots at ``address``; reconnect once."""
    record = MatchRecord()
    async with grpc.aio.insecure_channel(address) as channel:
        client = HokmClient(channel)
        record.player_id = await client.sign_in(device_id or f"example-{uuid.uuid4()}")
        table = await client.start_table_with_bots(target_score)
        record.game_id = table.game_id
        # The host sits at seat 0; the view says so too (view.seat).
        record.seat = 0
        ended = await client.follow(record, drop_after_events=drop_after_events)
        if not ended:
            # The app lost its stream: subscribe again from the last seq it received. No
            # event is lost or repeated, and presence gives the seat back if a bot took it.
            record.reconnections += 1
            ended = await client.follow(record, drop_after_events=None)
        assert ended, "the second stream runs to the end of the match"
        final = await client.game.GetView(
            game_pb2.GetViewRequest(game_id=record.game_id), metadata=client.metadata)
        record.final_view = final.hokm
    return record


def main() -> None:
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    record = asyncio.run(play_hokm(address))
    view = record.final_view
    assert view is not None
    print(f"game {record.game_id}: {len(record.receipts)} events, "
          f"{record.moves_played} moves played, scores {list(view.scores)}, "
          f"winners {list(view.winners)}; server clock offset "
          f"{record.clock.offset_ms:+.0f} ms (±{record.clock.uncertainty_ms:.0f})")
    receipts = Path(f"{record.game_id}.receipts.jsonl")
    record.write_receipts(receipts)
    print(f"receipts written to {receipts}: dast verify GAME.jsonl --receipts {receipts}")


if __name__ == "__main__":
    main()
