"""Whose turn (game.proto "Whose turn"): streams and replies tell each seat who acts next
and hand the seat to act its view, so whole matches are played without GetView."""

from __future__ import annotations

import asyncio

import pytest
from google.protobuf.message import Message

from dast.v1 import common_pb2, game_pb2, hand_pb2, hokm_pb2
from engine.core.rng import DeterministicRandom
from engine.registry import GAMES
from services.platform.auth import Role
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, choose, players

MATCHES = [
    pytest.param(common_pb2.GAME_TYPE_HOKM, hokm_pb2.HokmRules(target_score=1), 4, id="hokm-4p"),
    pytest.param(common_pb2.GAME_TYPE_HOKM,
                 hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=1),
                 3, id="hokm-3p"),
    pytest.param(common_pb2.GAME_TYPE_HAND, hand_pb2.HandRules(rounds=1), 3, id="hand-3p"),
]


async def _play_seat(
    client: GameClient, game_id: str, seat: int, received: list[game_pb2.SubscribeResponse],
) -> int:
    """Follow the seat's stream and act whenever it says so; return the commands sent."""
    rng = DeterministicRandom(bytes(32), f"turns/{seat}")
    sent = 0
    call = client.stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                 metadata=client.metadata)
    async for message in call:
        received.append(message)
        if not message.turn.your_turn:
            continue
        assert message.WhichOneof("view") is not None, "the seat to act gets its view"
        move = choose(message, rng)
        assert move is not None, f"seat {seat} is to act but its view lists no move"
        game = message.WhichOneof("view")
        reply = await client.submit(game_id, f"s{seat}-{sent}", move,
                                    expected_seq=message.event.seq, game=str(game))
        sent += 1
        # The reply carries the caller's view and whose turn it is, after the command.
        view = getattr(reply, str(reply.WhichOneof("view")))
        assert view.seat == seat and not view.is_spectator
        assert reply.server_time_ms > 0 and reply.seq == reply.events[-1].seq
        assert list(reply.turn.next_to_act) == ([view.turn] if view.HasField("turn") else [])
    return sent


@pytest.mark.parametrize(("game_type", "rules", "seats"), MATCHES)
async def test_a_whole_match_is_played_from_the_streams_alone(
    embedded: Embedded, game_type: int, rules: Message, seats: int
) -> None:
    lobby = embedded.client("lobby", Role.SERVICE)
    request = game_pb2.CreateGameRequest(game_type=game_type, players=players(seats))  # type: ignore[arg-type]
    getattr(request, GAMES[game_type].SCHEMA.field).CopyFrom(rules)
    game_id = (await lobby.create(request)).game_id
    clients = [embedded.client(f"p{seat}") for seat in range(seats)]
    streams: list[list[game_pb2.SubscribeResponse]] = [[] for _ in range(seats)]
    sent = await asyncio.wait_for(asyncio.gather(*(
        _play_seat(client, game_id, seat, streams[seat]) for seat, client in enumerate(clients)
    )), timeout=60)
    assert all(count > 0 for count in sent), sent

    # Every seat saw every event; the turns they were told are the log's truth.
    log = await embedded.client("root", Role.ADMIN).export(game_id)
    game = GAMES[game_type]
    assert all([m.event.seq for m in stream] == [e.event.seq for e in log] for stream in streams)
    state = None
    for index, entry in enumerate(log):
        state = game.replay([entry.event]) if state is None else game.evolve(state, entry.event)
        following = log[index + 1].event if index + 1 < len(log) else None
        ends_batch = following is None or game.command_for(following) is not None
        for seat, stream in enumerate(streams):
            message = stream[index]
            if not message.HasField("turn"):  # mid-batch, or history replayed at connection
                continue
            assert ends_batch, f"seq {entry.event.seq}: a turn told in the middle of a batch"
            expected = [] if game.is_over(state) else [game.to_act(state)]
            assert list(message.turn.next_to_act) == expected
            assert message.turn.your_turn == (seat in expected)
            assert (message.WhichOneof("view") is not None) == message.turn.your_turn
    # The match's final event says nobody is to act.
    assert all(not stream[-1].turn.next_to_act for stream in streams)


async def test_get_view_says_whose_turn_it_is(embedded: Embedded) -> None:
    lobby = embedded.client("lobby", Role.SERVICE)
    created = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4)))
    views = [await embedded.client(f"p{seat}").view(created.game_id) for seat in range(4)]
    public = await embedded.client("watcher").view(created.game_id)
    to_act = views[0].hokm.turn
    for seat, view in enumerate(views):
        assert list(view.turn.next_to_act) == [to_act]
        assert view.turn.your_turn == (seat == to_act)
        assert view.server_time_ms > 0
    assert list(public.turn.next_to_act) == [to_act] and not public.turn.your_turn


async def test_a_late_subscriber_is_told_the_turn_on_the_newest_event(
    embedded: Embedded,
) -> None:
    lobby = embedded.client("lobby", Role.SERVICE)
    created = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4)))
    hakem = (await embedded.client("p0").view(created.game_id)).hokm.turn
    client = embedded.client(f"p{hakem}")
    call = client.stub.Subscribe(game_pb2.SubscribeRequest(game_id=created.game_id),
                                 metadata=client.metadata)
    messages: list[game_pb2.SubscribeResponse] = []
    async for message in call:
        messages.append(message)
        if message.event.seq == created.seq:
            break
    call.cancel()
    assert [m.HasField("turn") for m in messages] == [False] * (created.seq - 1) + [True]
    newest = messages[-1]
    assert newest.turn.your_turn and list(newest.turn.next_to_act) == [hakem]
    assert newest.hokm.legal, "the hakem's view lists its trump choices"


async def test_a_service_reply_says_whose_turn_without_a_view(embedded: Embedded) -> None:
    lobby = embedded.client("lobby", Role.SERVICE)
    created = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4)))
    hakem = (await embedded.client("p0").view(created.game_id)).hokm.turn
    declare = hokm_pb2.HokmCommand(
        declare_trump=hokm_pb2.DeclareTrump(suit=common_pb2.SUIT_HEARTS))
    reply = await lobby.submit(created.game_id, "bot-declares", declare, seat=hakem)
    # The hakem leads the first trick: the bot is to act again, and gets no view for it.
    assert list(reply.turn.next_to_act) == [hakem] and reply.turn.your_turn
    assert reply.WhichOneof("view") is None and reply.server_time_ms > 0
