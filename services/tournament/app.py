"""Wiring of the tournament service into a process: its servicer, publisher and conductor.

The composition root (:mod:`services.compose`) builds a :class:`TournamentApp` over the
service's store and the tournaments' bus, mounts it on the gRPC server, then starts it with
the game service's target and the games' bus::

    app = TournamentApp.build(store, tournaments_bus, signer=keys.signer("tournament"),
                              policy=CreationPolicy(Creators(settings.tournament_creators),
                                                    settings.tournament_open_per_player))
    app.mount(server)
    tasks = app.start(games_bus, game_target="127.0.0.1:50051", board=presence_board)

Nothing lives only in this process: the logs are in the store, the matches in the game
service, the pending results on the durable consumer, the deadlines in the logs, the
players expected at the matches on the presence board.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Final

import grpc
import structlog

from dast.v1 import tournament_pb2, tournament_pb2_grpc
from engine import tournament as engine
from services.platform.auth import TokenSigner
from services.platform.background import BackgroundTasks
from services.platform.bans import Ban
from services.platform.bus import Bus, InProcessBus, cancel_and_wait, open_bus
from services.platform.clock import Clock, wall_clock_ms
from services.platform.config import Settings
from services.platform.presence_kv import PresenceBoard
from services.tournament.attendance import Attendance
from services.tournament.conductor import Conductor
from services.tournament.games import GrpcTournamentGames
from services.tournament.paging import PageTokens
from services.tournament.policy import CreationPolicy
from services.tournament.publisher import LogPublisher
from services.tournament.service import TournamentService
from services.tournament.store import TournamentStore
from services.tournament.tournaments import Tournaments

SERVICE_NAME: Final = tournament_pb2.DESCRIPTOR.services_by_name["TournamentService"].full_name
EVENT_TYPE_URL: Final = "type.googleapis.com/dast.v1.TournamentEvent.json"
"""What ``Any.type_url`` the tournaments' events carry on the bus: the engine's canonical
JSON bytes of :class:`engine.tournament.Event` (no protobuf message of their own)."""
_log = structlog.get_logger(component="tournament")


def tournaments_bus(settings: Settings) -> Bus:
    """The bus of the tournaments' events: a stream of its own beside the games' (NATS:
    the deployment's ``<events stream>_TOURNAMENTS``, subjects ``<events
    prefix>_tournaments.…``: :mod:`services.platform.nats_names`), or an in-process bus."""
    if not settings.nats_url:
        return InProcessBus()
    names = settings.nats_names()
    return open_bus(settings.nats_url, stream=names.tournaments_stream,
                    subject_prefix=names.tournaments_prefix)


@dataclass
class TournamentApp:
    """The tournament service of one process."""

    tournaments: Tournaments
    service: TournamentService
    publisher: LogPublisher
    signer: TokenSigner
    """The tournament service's token key: its calls to the game service are signed with
    it, and its page tokens' key derives from it."""
    sweep_seconds: float = 5.0
    conductor: Conductor | None = field(init=False, default=None)
    _games: GrpcTournamentGames | None = field(init=False, default=None)
    _tasks: list[asyncio.Task[None]] = field(init=False, default_factory=list)
    _withdrawals: BackgroundTasks = field(init=False, default_factory=BackgroundTasks)

    @classmethod
    def build(cls, store: TournamentStore, bus: Bus, *, signer: TokenSigner,
              clock: Clock = wall_clock_ms, sweep_seconds: float = 5.0,
              policy: CreationPolicy | None = None) -> TournamentApp:
        """The service over ``store``, publishing the logs on ``bus`` (``policy``: who may
        create tournaments)."""
        tournaments = Tournaments(store, clock=clock)
        publisher = LogPublisher(store, bus, EVENT_TYPE_URL)
        tournaments.add_listener(publisher.wake)
        return cls(tournaments, TournamentService(
            tournaments, bus, page_tokens=PageTokens(signer.seed.hex()), policy=policy,
        ), publisher, signer, sweep_seconds)

    def mount(self, server: grpc.aio.Server) -> str:
        """Add the servicer to ``server``; its full name."""
        tournament_pb2_grpc.add_TournamentServiceServicer_to_server(self.service, server)
        return str(SERVICE_NAME)

    def start(self, games_bus: Bus, *, game_target: str, durable: str = "tournaments",
              board: PresenceBoard | None = None) -> None:
        """Run the publisher and the conductor (following ``games_bus`` on ``durable``),
        creating matches through the game service at ``game_target`` and expecting their
        players on the presence ``board`` (None: no absence is ever detected)."""
        self._games = GrpcTournamentGames(game_target, self.signer)
        attendance = (Attendance(board, clock=self.tournaments.clock) if board is not None
                      else None)
        self.conductor = Conductor(self.tournaments, self._games,
                                   clock=self.tournaments.clock,
                                   sweep_seconds=self.sweep_seconds, attendance=attendance)
        self._tasks = [
            asyncio.create_task(self.publisher.run(), name="tournament-publisher"),
            asyncio.create_task(self.conductor.run(games_bus, durable=durable),
                                name="tournament-conductor"),
        ]

    def on_ban(self, player_id: str, ban: Ban | None) -> None:
        """A :data:`~services.platform.bans.BanListener`: withdraw a banned player from every
        tournament of theirs (:meth:`withdraw_player`), and blank a deleted account's names
        (:meth:`erase_names`), in the background."""
        if ban is None:
            return
        self._withdrawals.spawn(self.withdraw_player(player_id),
                                name=f"tournament-ban:{player_id}")
        if ban.erased:
            self._withdrawals.spawn(self.erase_names(player_id),
                                    name=f"tournament-erase:{player_id}")

    async def erase_names(self, player_id: str) -> int:
        """Blank the names ``player_id`` registered under in every tournament (a deleted
        account): shown as a deleted player's from now on; how many. The logs never held
        them (services.tournament.names). Every replica does it; a second time changes
        nothing."""
        try:
            erased = await asyncio.to_thread(self.tournaments.store.erase_names, player_id)
        except Exception:
            _log.exception("tournament_names_not_erased", player_id=player_id)
            return 0
        _log.info("tournament_names_erased", player_id=player_id, names=erased)
        return erased

    async def withdraw_player(self, player_id: str) -> int:
        """Withdraw the entries of ``player_id`` (alone or in a pair) from every tournament
        registering or running, as if they had unregistered: taken out before the start,
        paired no more after it; how many. Every replica told of a ban does this; a second
        time changes nothing."""
        store = self.tournaments.store
        heads = [head for status in (tournament_pb2.TOURNAMENT_STATUS_REGISTERING,
                                     tournament_pb2.TOURNAMENT_STATUS_RUNNING)
                 for head in await asyncio.to_thread(store.heads_in, status)]
        withdrawn = 0

        def entry_of(state: engine.TournamentState) -> engine.Command | None:
            for entrant in state.entrants.values():
                if player_id in entrant.members and entrant.entrant_id not in state.withdrawn:
                    return engine.Withdraw(entrant.entrant_id, at_ms=self.tournaments.clock())
            return None

        for head in heads:
            try:
                _, events = await self.tournaments.step(head.tournament_id, entry_of)
            except Exception:
                _log.exception("banned_player_not_withdrawn", tournament_id=head.tournament_id)
                continue
            withdrawn += bool(events)
        if withdrawn:
            _log.info("banned_player_withdrawn", player_id=player_id, tournaments=withdrawn)
        return withdrawn

    async def stop(self) -> None:
        """Cancel the background work and close the channel to the game service."""
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        if self._games is not None:
            await self._games.close()
