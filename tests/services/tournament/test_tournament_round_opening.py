"""A round opens in batches (services/tournament/conductor.py): every table's match is
created, its stand-ins seated and its players expected, each table once, as the round's
log seats it; a replica killed while opening a round leaves the rest to the next one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from dast.v1 import common_pb2, game_pb2, log_pb2, tournament_pb2
from engine import tournament as engine
from services.platform.presence_kv import InProcessPresenceBoard, PresenceRecord
from services.tournament import options
from services.tournament.attendance import Attendance
from services.tournament.conductor import Conductor
from services.tournament.store import TournamentStore
from services.tournament.tournaments import ChooseCommand, Loaded, Tournaments

PLAYERS = 14
AWAY = "p3"


class RecordingGames:
    """The game service as the conductor sees it, keeping what it was asked: a match
    created again counts as created (ALREADY_EXISTS), as over gRPC."""

    def __init__(self) -> None:
        self.created: dict[str, game_pb2.CreateGameRequest] = {}
        self.creations = 0
        self.stand_ins: set[tuple[str, int, str]] = set()
        self.answered: int | None = None
        """How many creations it answers before it stops answering (None: all)."""
        self.stuck = asyncio.Event()
        """Set once a creation goes unanswered."""

    async def create(self, request: game_pb2.CreateGameRequest) -> None:
        if self.answered is not None and self.creations >= self.answered:
            self.stuck.set()
            await asyncio.Event().wait()
        self.creations += 1
        self.created.setdefault(request.game_id, request)

    async def stand_in(self, game_id: str, seat: int, bot_level: str) -> None:
        self.stand_ins.add((game_id, seat, bot_level))

    async def finished_log(self, game_id: str) -> list[log_pb2.Event] | None:
        return None

    async def current_log(self, game_id: str) -> list[log_pb2.Event] | None:
        return None


@pytest.fixture
def sqlite_store() -> Iterator[TournamentStore]:
    opened = TournamentStore.open(None)
    yield opened
    opened.close()


def _always(command: engine.Command) -> ChooseCommand:
    def choose(_: engine.TournamentState) -> engine.Command:
        return command

    return choose


async def _started(tournaments: Tournaments) -> Loaded:
    """A Swiss Hokm tournament of ``PLAYERS`` players at four-seat tables (bots fill the
    last one), ``AWAY`` marked away, round 1 seated."""
    loaded = await tournaments.create(tournament_pb2.TournamentSettings(
        name="batches", game_type=common_pb2.GAME_TYPE_HOKM,
        format=tournament_pb2.TOURNAMENT_FORMAT_SWISS, rounds=2, target_score=1,
        bot_level="random"), "host", tournament_id="batches-1", seed=bytes(32))
    # A chosen id and seed: the draw is theirs, and this one seats AWAY in round 1 (about one
    # draw in ten gives the away player the round's bye instead).
    tournament_id = loaded.tournament_id
    for number in range(PLAYERS):
        await tournaments.step(tournament_id,
                               _always(engine.Register(f"p{number}", (f"p{number}",))))
    await tournaments.step(tournament_id, _always(engine.SetAbsent(AWAY, True)))
    _, events = await tournaments.step(tournament_id, _always(engine.Start()))
    assert any(isinstance(event.body, engine.RoundStarted) for event in events)
    return await tournaments.load(tournament_id)


def _assert_round_opened(loaded: Loaded, games: RecordingGames,
                         records: list[PresenceRecord]) -> None:
    """Every table of the round created once, seated as the log seats it, its stand-in
    seated and its players expected."""
    state = loaded.state
    expected_ids = {options.game_id_of(loaded.tournament_id, state.round, table.table): table
                    for table in state.tables}
    assert set(games.created) == set(expected_ids)
    for game_id, table in expected_ids.items():
        request = games.created[game_id]
        seated = [player.player_id for player in request.players]
        assert [seat.player_id for seat in table.seats if seat.player_id] == [
            player for player in seated if not player.startswith("bot:")]
        assert len(seated) == len(table.seats)
        for index, seat in enumerate(table.seats):
            if seat.player_id:
                assert seated[index] == seat.player_id
            if seat.stand_in:
                assert (game_id, index, "random") in games.stand_ins
    away_tables = [game_id for game_id, table in expected_ids.items()
                   if any(seat.player_id == AWAY for seat in table.seats)]
    assert len(away_tables) == 1 and len(games.stand_ins) == 1
    expected_players = {(record.game_id, player) for record in records
                        for player in record.closed}
    assert expected_players == {
        (game_id, seat.player_id) for game_id, table in expected_ids.items()
        for seat in table.seats if seat.player_id and not seat.stand_in}


async def test_a_round_opens_every_table_once_as_its_log_seats_it(
    sqlite_store: TournamentStore,
) -> None:
    tournaments = Tournaments(sqlite_store)
    loaded = await _started(tournaments)
    games, board = RecordingGames(), InProcessPresenceBoard()
    conductor = Conductor(tournaments, games, attendance=Attendance(board))
    assert await conductor.open_tables(loaded) == len(loaded.state.tables)
    assert games.creations == len(loaded.state.tables)
    assert conductor.created == len(loaded.state.tables)
    _assert_round_opened(loaded, games, await board.records())
    assert await conductor.open_tables(loaded) == 0  # opened: nothing asked again
    assert games.creations == len(loaded.state.tables)


async def test_a_replica_killed_while_opening_a_round_leaves_the_rest_to_the_next(
    sqlite_store: TournamentStore,
) -> None:
    loaded = await _started(Tournaments(sqlite_store))
    games, board = RecordingGames(), InProcessPresenceBoard()
    killed = Conductor(Tournaments(sqlite_store), games, attendance=Attendance(board))
    games.answered = 2
    opening = asyncio.create_task(killed.open_tables(loaded))
    await games.stuck.wait()
    opening.cancel()  # mid-round: two matches created, none seated or expected
    with pytest.raises(asyncio.CancelledError):
        await opening
    assert (killed.created, len(games.created)) == (0, 2)
    assert games.stand_ins == set() and await board.records() == []
    games.answered = None

    # Another replica's sweep (or this one restarted) finds the round and opens it all.
    tournaments = Tournaments(sqlite_store)
    survivor = Conductor(tournaments, games, attendance=Attendance(board))
    assert await survivor.sweep() == 0
    _assert_round_opened(await tournaments.load(loaded.tournament_id), games,
                         await board.records())
    assert survivor.created == len(loaded.state.tables)
