"""ReplayService over gRPC: who may replay what, tried as an attacker.

Matches are stored straight into the game service's event store from the golden logs: the
whole log for a finished match, a prefix of it for a running one. A running match is
replayed only from the caller's own seat or as spectators see it; no frame of it, at any
seq, shows a card its viewer may not see (checked with the games' visibility hooks), and
no caller, admins included, sees it from above or from another seat before it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2, log_pb2, replay_pb2, replay_pb2_grpc
from engine.core.logformat import load_jsonl
from engine.core.payload import take
from engine.core.protocol import Game
from engine.core.rng import DeterministicRandom
from engine.core.testing import Visibility
from engine.hokm.views import event_cards, hidden_mask, view_cards
from engine.registry import game_of_event
from services.game.replay import Viewpoint, frame_at
from services.platform.auth import Role
from services.platform.errors import Reason, reason_of
from tests.engine.hand.visibility import VISIBILITY as HAND_VISIBILITY
from tests.golden_logs import GOLDEN, GoldenMatch
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import next_move, players, stream_into
from tests.support.tokens import token

HOKM_VISIBILITY = Visibility(hidden_mask=hidden_mask, event_cards=event_cards,
                             view_cards=view_cards)
VISIBILITY = {"hokm": HOKM_VISIBILITY, "hand": HAND_VISIBILITY}
SEAT = replay_pb2.REPLAY_VIEWPOINT_SEAT
SPECTATOR = replay_pb2.REPLAY_VIEWPOINT_SPECTATOR
TABLE = replay_pb2.REPLAY_VIEWPOINT_TABLE
METHOD = "/dast.v1.ReplayService/GetReplayFrame"


def _golden(name: str) -> GoldenMatch:
    return next(match for match in GOLDEN if match.name == name)


def _store(embedded: Embedded, name: str, game_id: str, *, upto: int | None = None,
           spectators_allowed: bool = True) -> list[Any]:
    """Store the golden log ``name`` (its first ``upto`` entries: a running match)."""
    entries = load_jsonl(_golden(name).path.read_text(encoding="utf-8"))
    entries = entries[:upto] if upto is not None else entries
    game = game_of_event(entries[0].event)
    embedded.store.create_game(game_id, game.GAME_TYPE, entries,
                               spectators_allowed=spectators_allowed)
    return entries


class Replayer:
    def __init__(self, embedded: Embedded, player_id: str, role: Role = Role.PLAYER) -> None:
        self.stub = replay_pb2_grpc.ReplayServiceStub(embedded.channel)
        self.metadata = (("authorization", f"Bearer {token(player_id, role)}"),)

    async def frame(self, game_id: str, seq: int = 0, viewpoint: int = 0,
                    seat: int | None = None) -> replay_pb2.ReplayFrame:
        request = replay_pb2.GetReplayFrameRequest(game_id=game_id, seq=seq,
                                                   viewpoint=viewpoint)  # type: ignore[arg-type]
        if seat is not None:
            request.seat = seat
        reply: replay_pb2.GetReplayFrameResponse = await self.stub.GetReplayFrame(
            request, metadata=self.metadata)
        return reply.frame

    async def page(self, game_id: str, after_seq: int = 0, page_size: int = 0,
                   viewpoint: int = 0, seat: int | None = None
                   ) -> replay_pb2.ListReplayFramesResponse:
        request = replay_pb2.ListReplayFramesRequest(
            game_id=game_id, after_seq=after_seq, page_size=page_size,
            viewpoint=viewpoint)  # type: ignore[arg-type]
        if seat is not None:
            request.seat = seat
        reply: replay_pb2.ListReplayFramesResponse = await self.stub.ListReplayFrames(
            request, metadata=self.metadata)
        return reply


async def _refused(call: Awaitable[object]) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value.code(), reason_of(caught.value)


def _view(game: Game, replay_view: replay_pb2.ReplayView) -> Any:
    return take(replay_view, "view", game.SCHEMA, game.SCHEMA.view)


def _leaked(game: Game, frame: replay_pb2.ReplayFrame, state: Any,
            seat: int | None) -> int:
    """The cards ``frame`` shows that ``seat`` may not see in ``state`` (a mask; 0: none)."""
    visibility = VISIBILITY[game.NAME]
    shown = visibility.event_cards(frame.event)
    for replay_view in frame.views:
        shown |= visibility.view_cards(_view(game, replay_view))
    return shown & visibility.hidden_mask(state.inner, seat)


@pytest.mark.parametrize("name, upto", [("hokm_3p", 140), ("hand_2p", 90)])
async def test_no_frame_of_a_running_match_shows_its_viewer_a_hidden_card(
    embedded: Embedded, name: str, upto: int
) -> None:
    entries = _store(embedded, name, "running", upto=upto)
    game = game_of_event(entries[0].event)
    seated = Replayer(embedded, f"{name}-0")
    stranger = Replayer(embedded, "stranger")
    state: Any = None
    seen_from_above = 0
    for entry in entries:
        state = game.evolve(state, entry.event)
        seq = entry.event.seq
        own = await seated.frame("running", seq)  # unspecified: the caller's own seat
        assert (own.viewpoint, own.seat, own.seq, own.last_seq) == (SEAT, 0, seq, upto)
        assert not own.finished and own.hash == entry.hash
        assert own.event == game.redact(entry.event, 0)
        assert _view(game, own.views[0]) == game.view(state, 0)
        assert _leaked(game, own, state, 0) == 0, seq
        public = await stranger.frame("running", seq)
        assert public.viewpoint == SPECTATOR and not public.HasField("seat")
        assert public.event == game.redact(entry.event, None)
        assert _leaked(game, public, state, None) == 0, seq
        assert not _server_seed(public.event)
        seen_from_above |= _leaked(game, frame_at("running", entries, seq, Viewpoint(TABLE)),
                                   state, 0)
    # The first event's server seed stays hidden from both until the end.
    assert not _server_seed((await seated.frame("running", 1)).event)
    # The check has teeth: the same frames seen from above show seat 0 hidden cards.
    assert seen_from_above != 0
    assert _server_seed(frame_at("running", entries, 1, Viewpoint(TABLE)).event)


def _server_seed(event: Any) -> bytes:
    member = event.WhichOneof("game")
    payload = getattr(event, member)
    if payload.WhichOneof("kind") != "match_started":
        return b""
    return bytes(payload.match_started.fairness.server_seed)


async def test_a_running_match_is_refused_from_other_seats_and_from_above(
    embedded: Embedded,
) -> None:
    _store(embedded, "hokm_4p", "running", upto=60)
    player = Replayer(embedded, "hokm_4p-0")
    admin = Replayer(embedded, "root", Role.ADMIN)
    bots = Replayer(embedded, "bots", Role.SERVICE)
    stranger = Replayer(embedded, "stranger")
    not_yours = (grpc.StatusCode.PERMISSION_DENIED, str(Reason.NOT_YOUR_SEAT))
    not_over = (grpc.StatusCode.FAILED_PRECONDITION, str(Reason.GAME_NOT_OVER))
    for seq in (0, 1, 5, 60):
        for seat in (1, 2, 3):
            assert await _refused(player.frame("running", seq, SEAT, seat)) == not_yours
            assert await _refused(admin.frame("running", seq, SEAT, seat)) == not_yours
            assert await _refused(bots.frame("running", seq, SEAT, seat)) == not_yours
            assert await _refused(stranger.frame("running", seq, SEAT, seat)) == not_yours
        for caller in (player, admin, bots, stranger):
            assert await _refused(caller.frame("running", seq, TABLE)) == not_over
    # Admins and services hold no seat: the spectators' view, with no hand in it.
    for caller in (admin, bots):
        frame = await caller.frame("running", 30)
        assert frame.viewpoint == SPECTATOR and len(frame.views) == 1
        assert not frame.views[0].hokm.hand and frame.views[0].hokm.is_spectator
    # A player's own seat named explicitly is theirs to see.
    own = await player.frame("running", 30, SEAT, 0)
    assert own.seat == 0 and list(own.views[0].hokm.hand)


async def test_forged_seqs_and_seats_are_refused_without_revealing_the_log(
    embedded: Embedded,
) -> None:
    _store(embedded, "hokm_4p", "running", upto=60)
    _store(embedded, "hokm_2p", "closed", upto=40, spectators_allowed=False)
    player = Replayer(embedded, "hokm_4p-1")
    out_of_range = (grpc.StatusCode.INVALID_ARGUMENT, str(Reason.INVALID_REQUEST))
    for seq in (61, 62, 2**32, 2**63, 2**64 - 1):  # 2**64 - 1: a "negative" int64 seq
        assert await _refused(player.frame("running", seq)) == out_of_range
    # The same seq sent as a negative varint on the wire, as an int64 -1 encodes.
    raw = embedded.channel.unary_unary(
        METHOD, request_serializer=lambda body: body,
        response_deserializer=replay_pb2.GetReplayFrameResponse.FromString)
    negative = b"\x0a\x07running" + b"\x10" + b"\xff" * 9 + b"\x01"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw(negative, metadata=player.metadata)
    assert (caught.value.code(), reason_of(caught.value)) == out_of_range
    unknown_viewpoint = b"\x0a\x07running" + b"\x18\x63"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw(unknown_viewpoint, metadata=player.metadata)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # A stranger to a table without spectators learns nothing, not even the log's length.
    stranger = Replayer(embedded, "stranger")
    closed = (grpc.StatusCode.PERMISSION_DENIED, str(Reason.SPECTATORS_NOT_ALLOWED))
    for seq in (0, 1, 40, 41, 2**63):
        assert await _refused(stranger.frame("closed", seq)) == closed
        assert await _refused(stranger.frame("closed", seq, SEAT, 0)) == closed
    # Unknown or impossible games, a seat with the wrong viewpoint, a seat that is not there.
    missing = (grpc.StatusCode.NOT_FOUND, str(Reason.GAME_NOT_FOUND))
    assert await _refused(player.frame("no-such-game", 1)) == missing
    assert await _refused(player.frame("../../etc", 1)) == missing
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert (await _refused(player.frame("running", 1, SPECTATOR, 1)))[0] == invalid
    assert (await _refused(player.frame("running", 1, SEAT, 9)))[0] == (
        grpc.StatusCode.PERMISSION_DENIED)  # not theirs, before whether it exists
    stub = replay_pb2_grpc.ReplayServiceStub(embedded.channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetReplayFrame(replay_pb2.GetReplayFrameRequest(game_id="running", seq=1))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_finished_match_steps_to_every_seq_from_every_viewpoint(
    embedded: Embedded,
) -> None:
    entries = _store(embedded, "hokm_2p", "done")
    game = game_of_event(entries[0].event)
    stranger = Replayer(embedded, "stranger")  # the table admitted spectators
    state: Any = None
    for entry in entries:
        state = game.evolve(state, entry.event)
        above = await stranger.frame("done", entry.event.seq, TABLE)
        assert above.finished and above.last_seq == len(entries)
        assert above.event == entry.event and above.hash == entry.hash
        assert [_view(game, v) for v in above.views] == [
            game.view(state, seat) for seat in (None, 0, 1)]
    last = await stranger.frame("done")  # seq 0: the last event
    assert last.seq == len(entries) and game.revealed_seed(last.event) is not None
    # Any seat of a finished match, for its players, services, admins and spectators.
    for caller in (Replayer(embedded, "hokm_2p-0"), Replayer(embedded, "root", Role.ADMIN),
                   stranger):
        frame = await caller.frame("done", 20, SEAT, 1)
        assert frame.seat == 1 and list(frame.views[0].hokm.hand)
    assert (await _refused(stranger.frame("done", 1, SEAT, 2)))[0] == (
        grpc.StatusCode.INVALID_ARGUMENT)
    assert (await _refused(stranger.frame("done", len(entries) + 1)))[0] == (
        grpc.StatusCode.INVALID_ARGUMENT)


async def test_a_finished_match_without_spectators_is_replayed_by_its_players_only(
    embedded: Embedded,
) -> None:
    _store(embedded, "hand_4p_partners", "private", spectators_allowed=False)
    closed = (grpc.StatusCode.PERMISSION_DENIED, str(Reason.SPECTATORS_NOT_ALLOWED))
    assert await _refused(Replayer(embedded, "stranger").frame("private", 5, TABLE)) == closed
    frame = await Replayer(embedded, "hand_4p_partners-2").frame("private", 5, TABLE)
    assert len(frame.views) == 5
    assert (await Replayer(embedded, "bots", Role.SERVICE).frame("private", 5, TABLE)).views


async def test_views_of_a_running_match_never_show_another_seat(embedded: Embedded) -> None:
    """GetView, next to replay: a player asking for another seat is refused, a spectator
    sees no hand."""
    _store(embedded, "hokm_4p", "running", upto=60)
    player = embedded.client("hokm_4p-0")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await player.view("running", seat=1)
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    spectator: game_pb2.GetViewResponse = await embedded.client("stranger").view("running")
    assert spectator.hokm.is_spectator and not spectator.hokm.hand


async def test_a_replay_shows_a_seat_what_its_live_stream_showed(embedded: Embedded) -> None:
    """A match created and played through GameService: at every seq, the replay of seat 1
    and of a spectator is the event their Subscribe stream delivered."""
    lobby = embedded.client("lobby", Role.SERVICE)
    created = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4)))
    game_id = created.game_id
    clients = [embedded.client(f"p{seat}") for seat in range(4)]
    streamed: dict[int | None, list[log_pb2.Event]] = {1: [], None: []}
    tasks = [asyncio.create_task(stream_into(clients[1], game_id, 0, streamed[1])),
             asyncio.create_task(stream_into(embedded.client("watcher"), game_id, 0,
                                             streamed[None]))]
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
    for move_number in range(30):
        move = await next_move(clients, game_id, rngs)
        assert move is not None
        seat, body, seq = move
        await clients[seat].submit(game_id, f"m{move_number}", body, expected_seq=seq)
    head = (await clients[0].view(game_id)).seq
    async with asyncio.timeout(20):
        while min(len(events) for events in streamed.values()) < head:
            await asyncio.sleep(0.01)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    seat_one, watcher = Replayer(embedded, "p1"), Replayer(embedded, "watcher")
    for seq in range(1, head + 1):
        assert (await seat_one.frame(game_id, seq)).event == streamed[1][seq - 1]
        assert (await watcher.frame(game_id, seq)).event == streamed[None][seq - 1]


async def test_pages_of_frames_are_the_frames_one_by_one(embedded: Embedded) -> None:
    entries = _store(embedded, "hand_4p_partners", "done")
    _store(embedded, "hokm_4p", "running", upto=70)
    stranger = Replayer(embedded, "stranger")
    paged: list[replay_pb2.ReplayFrame] = []
    while not paged or paged[-1].seq < len(entries):
        page = await stranger.page("done", len(paged), 40, TABLE)
        assert page.last_seq == len(entries) and 0 < len(page.frames) <= 40
        paged.extend(page.frames)
    assert [frame.seq for frame in paged] == list(range(1, len(entries) + 1))
    for frame in paged[::9]:
        assert frame == await stranger.frame("done", frame.seq, TABLE)
    assert not (await stranger.page("done", len(entries))).frames  # the end
    assert not (await stranger.page("done", 2**63)).frames
    assert len((await stranger.page("done")).frames) == 32  # the default page
    assert len((await stranger.page("done", 0, 10_000)).frames) == 64  # the most a page has
    # A running match: the player's own seat up to the head, nothing of another seat.
    player = Replayer(embedded, "hokm_4p-3")
    own = (await player.page("running", 50, 64)).frames
    assert [frame.seq for frame in own] == list(range(51, 71))
    assert all(frame.seat == 3 and frame.views[0].hokm.seat == 3 for frame in own)
    assert await _refused(player.page("running", 0, 10, SEAT, 2)) == (
        grpc.StatusCode.PERMISSION_DENIED, str(Reason.NOT_YOUR_SEAT))
    assert await _refused(player.page("running", 0, 10, TABLE)) == (
        grpc.StatusCode.FAILED_PRECONDITION, str(Reason.GAME_NOT_OVER))
