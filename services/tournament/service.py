"""The gRPC ``dast.v1.TournamentService``: thin methods over :class:`Tournaments`.

Every method reads the caller (the auth interceptor checked the token), loads the
tournament, and either answers from its state or takes one step (a command to the engine,
appended once whatever the replicas do). The engine's refusals leave as
FAILED_PRECONDITION (rules) or INVALID_ARGUMENT (malformed), with its stable codes.

Creating is subject to the deployment's :class:`~services.tournament.policy.CreationPolicy`;
a tournament's name follows the display-name rules
(:func:`~services.platform.validation.clean_display_name`, up to
:data:`~services.tournament.options.MAX_NAME_CHARS` characters); listings page with signed
tokens (:mod:`services.tournament.paging`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Final

import grpc

from dast.v1 import tournament_pb2, tournament_pb2_grpc
from engine import tournament as engine
from engine.core.errors import RuleViolation
from engine.core.protocol import BOT_LEVELS
from engine.tournament.errors import TournamentCode
from engine.tournament.model import DEFAULT_RATING
from services.platform.auth import Identity, current_identity
from services.platform.bus import Bus, raise_if_cancelling
from services.platform.errors import Reason, ServiceError
from services.platform.validation import check_id, clean_display_name
from services.tournament import options
from services.tournament.names import Shown, entrant_name
from services.tournament.paging import PageTokens
from services.tournament.policy import CreationPolicy
from services.tournament.reasons import TournamentServiceReason
from services.tournament.store import KeptName, ListingQuery
from services.tournament.tournaments import Loaded, Tournaments

DEFAULT_LIST_LIMIT: Final = 50
MAX_LIST_LIMIT: Final = 200
WATCH_POLL_SECONDS: Final = 1.0
"""How often a standings stream re-reads the head besides the bus's wake-ups."""
BOT_PREFIX: Final = "bot:"


def _named(command: engine.Command, name: str) -> list[tuple[str, str]]:
    """The name ``command`` registers, kept beside the log: a player's (or a bot entrant's)
    own, by its id."""
    if isinstance(command, engine.Register):
        return [(command.entrant_id, name)]
    if isinstance(command, engine.AskPartner) and command.partner_id:
        return [(command.player_id, name)]
    return []


def _denied(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED, message)


def _entered(loaded: Loaded, player_id: str) -> bool:
    """Whether ``player_id`` is a member of one of the tournament's entrants."""
    return any(player_id in entrant.members for entrant in loaded.state.entrants.values())


def _is_host(loaded: Loaded, caller: Identity) -> bool:
    return caller.is_privileged or loaded.summary.host_id == caller.player_id


def is_bot_player(player_id: str) -> bool:
    """Whether a registered player is a bot (its id is a bot's)."""
    return player_id.startswith(BOT_PREFIX)


def entrant_message(entrant: engine.Entrant, names: Mapping[str, KeptName]
                    ) -> tournament_pb2.Entrant:
    """An entrant as the wire carries it, named by the ``names`` kept beside the log."""
    shown = entrant_name(entrant, names)
    return tournament_pb2.Entrant(
        player_id=entrant.entrant_id, display_name=shown.display_name, deleted=shown.deleted,
        is_bot=all(is_bot_player(member) for member in entrant.members),
        rating=entrant.rating)


def standings_of(state: engine.TournamentState, names: Mapping[str, KeptName]
                 ) -> list[tournament_pb2.Standing]:
    """The standings as the wire carries them, named by the ``names`` kept beside the log
    (before the first round ends: the field in registration order, at zero)."""
    tie_breaks = state.options.tie_breaks
    lines = []
    standings = state.standings or tuple(
        engine.Standing(rank=index, entrant_id=entrant_id, match_points=0, points=0,
                        tricks=0, wins=0, played=0, byes=0, opponents=0)
        for index, entrant_id in enumerate(state.entrants, start=1)
    )
    for line in standings:
        entrant = state.entrants.get(line.entrant_id)
        members = entrant.members if entrant is not None else ()
        values = {engine.TieBreak.TRICKS: line.tricks, engine.TieBreak.POINTS: line.points,
                  engine.TieBreak.WINS: line.wins, engine.TieBreak.OPPONENTS: line.opponents}
        shown = (entrant_name(entrant, names) if entrant is not None
                 else Shown(line.entrant_id))
        lines.append(tournament_pb2.Standing(
            rank=line.rank, player_id=line.entrant_id,
            display_name=shown.display_name, deleted=shown.deleted,
            is_bot=bool(members) and all(is_bot_player(member) for member in members),
            match_points=line.match_points, game_points=line.points, tricks=line.tricks,
            played=line.played, won=line.wins, byes=line.byes,
            eliminated=line.eliminated_in_round > 0,
            tie_breaks=[values[tie_break] for tie_break in tie_breaks],
        ))
    return lines


class TournamentService(tournament_pb2_grpc.TournamentServiceServicer):
    """The servicer; ``bus`` carries the tournaments' events (wake-ups of standings
    streams from any replica); ``page_tokens`` signs listing pages (with a key every replica
    shares); ``policy`` says who may create tournaments."""

    def __init__(self, tournaments: Tournaments, bus: Bus | None = None, *,
                 page_tokens: PageTokens, policy: CreationPolicy | None = None) -> None:
        self.tournaments = tournaments
        self.bus = bus
        self.page_tokens = page_tokens
        self.policy = policy or CreationPolicy()

    async def _load(self, tournament_id: str) -> Loaded:
        check_id(tournament_id, "tournament_id")
        return await self.tournaments.load(tournament_id)

    async def CreateTournament(
        self, request: tournament_pb2.CreateTournamentRequest,
        context: grpc.aio.ServicerContext,
    ) -> tournament_pb2.CreateTournamentResponse:
        caller = current_identity()
        open_limit = self.policy.check(caller)
        if request.featured and not caller.is_privileged:
            raise _denied("only operators feature tournaments")
        loaded = await self.tournaments.create(
            request.settings, caller.player_id, by_operator=caller.is_privileged,
            featured=request.featured, open_limit=open_limit)
        return tournament_pb2.CreateTournamentResponse(tournament=loaded.summary)

    async def FeatureTournament(
        self, request: tournament_pb2.FeatureTournamentRequest,
        context: grpc.aio.ServicerContext,
    ) -> tournament_pb2.FeatureTournamentResponse:
        caller = current_identity()
        if not caller.is_privileged:
            raise _denied("only operators feature tournaments")
        loaded = await self._load(request.tournament_id)
        after, _ = await self.tournaments.step(
            loaded.tournament_id, lambda state: engine.Feature(
                featured=request.featured, at_ms=self.tournaments.clock()))
        return tournament_pb2.FeatureTournamentResponse(tournament=after.summary)

    async def CancelTournament(
        self, request: tournament_pb2.CancelTournamentRequest,
        context: grpc.aio.ServicerContext,
    ) -> tournament_pb2.CancelTournamentResponse:
        caller = current_identity()
        loaded = await self._load(request.tournament_id)
        if not _is_host(loaded, caller):
            raise _denied("only the host cancels the tournament")
        after, _ = await self.tournaments.step(
            loaded.tournament_id, lambda state: engine.Cancel(at_ms=self.tournaments.clock()))
        return tournament_pb2.CancelTournamentResponse(tournament=after.summary)

    async def RegisterPlayer(
        self, request: tournament_pb2.RegisterPlayerRequest, context: grpc.aio.ServicerContext
    ) -> tournament_pb2.RegisterPlayerResponse:
        caller = current_identity()
        loaded = await self._load(request.tournament_id)
        if request.rating and not caller.is_privileged:
            raise _denied("only services and admins give ratings")
        size = loaded.state.options.variant.side_size if (
            loaded.state.options.entry is engine.Entry.PAIRS) else 1
        # A bot is named only as the request names it (never after the host who adds it).
        name = clean_display_name(request.display_name) or (
            "" if request.bot_level else caller.display_name)
        rating = request.rating or DEFAULT_RATING
        if request.bot_level:
            if not _is_host(loaded, caller):
                raise _denied("only the host registers bots")
            level = request.bot_level
            if level not in BOT_LEVELS:
                raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                                   f"bot levels are {list(BOT_LEVELS)}",
                                   metadata={"field": "bot_level"})

            def members_of(state: engine.TournamentState) -> tuple[str, tuple[str, ...]]:
                number = len(state.entrants) + 1
                while f"{BOT_PREFIX}{level}:{state.tournament_id}-e{number}" in state.entrants:
                    number += 1  # an id freed by a withdrawal before it
                entrant = f"{BOT_PREFIX}{level}:{state.tournament_id}-e{number}"
                if size == 1:
                    return entrant, (entrant,)
                return entrant, tuple(f"{entrant}-{index}" for index in range(size))
        else:
            if is_bot_player(caller.player_id):
                raise _denied("bot ids are not players")
            if size > 1:
                return await self._ask_partner(loaded, caller, request, rating, name)
            entrant_id = caller.player_id
            members: tuple[str, ...] = (entrant_id,)

            def members_of(state: engine.TournamentState) -> tuple[str, tuple[str, ...]]:
                return entrant_id, members

        registered: list[engine.Entrant] = []

        def choose(state: engine.TournamentState) -> engine.Command:
            # No name in the log: it is kept beside it (services.tournament.names).
            entrant, chosen = members_of(state)
            registered[:] = [engine.Entrant(entrant, chosen, rating)]
            return engine.Register(entrant, chosen, rating=rating,
                                   at_ms=self.tournaments.clock())

        after, _ = await self.tournaments.step(
            loaded.tournament_id, choose, names=lambda command: _named(command, name))
        return tournament_pb2.RegisterPlayerResponse(
            tournament=after.summary, entrant=entrant_message(
                registered[-1], await self.tournaments.names_of(after.tournament_id)))

    async def _ask_partner(
        self, loaded: Loaded, caller: Identity, request: tournament_pb2.RegisterPlayerRequest,
        rating: int, name: str,
    ) -> tournament_pb2.RegisterPlayerResponse:
        """The caller's half of entering a registered pair: the pair is entered when the
        partner has asked for the caller too, so nobody is entered without asking."""
        player = caller.player_id
        if not request.partner_id and _entered(loaded, player):
            # The pair is in already: say so, as to any second entry, rather than asking
            # this member for a partner they have.
            raise RuleViolation(TournamentCode.PLAYER_ALREADY_ENTERED,
                                f"{player} has entered already")
        partner = check_id(request.partner_id, "partner_id")
        if is_bot_player(partner) or partner == player:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                               "partner_id names no partner", metadata={"field": "partner_id"})
        after, _ = await self.tournaments.step(
            loaded.tournament_id, lambda state: engine.AskPartner(
                player, partner, rating=rating, at_ms=self.tournaments.clock()),
            names=lambda command: _named(command, name))
        pair = next((entrant for entrant in after.state.entrants.values()
                     if player in entrant.members), None)
        if pair is None:
            return tournament_pb2.RegisterPlayerResponse(
                tournament=after.summary, waiting_for_partner=True)
        return tournament_pb2.RegisterPlayerResponse(
            tournament=after.summary, entrant=entrant_message(
                pair, await self.tournaments.names_of(after.tournament_id)))

    async def UnregisterPlayer(
        self, request: tournament_pb2.UnregisterPlayerRequest,
        context: grpc.aio.ServicerContext,
    ) -> tournament_pb2.UnregisterPlayerResponse:
        caller = current_identity()
        loaded = await self._load(request.tournament_id)

        def choose(state: engine.TournamentState) -> engine.Command:
            for entrant in state.entrants.values():
                if caller.player_id in entrant.members and (
                        entrant.entrant_id not in state.withdrawn):
                    return engine.Withdraw(entrant.entrant_id, at_ms=self.tournaments.clock())
            if caller.player_id in state.partner_asks:  # an ask for a partner, taken back
                return engine.AskPartner(caller.player_id, "", at_ms=self.tournaments.clock())
            raise ServiceError(grpc.StatusCode.NOT_FOUND, TournamentServiceReason.NOT_REGISTERED,
                               "the caller is not registered in this tournament")

        after, _ = await self.tournaments.step(loaded.tournament_id, choose)
        return tournament_pb2.UnregisterPlayerResponse(tournament=after.summary)

    async def StartTournament(
        self, request: tournament_pb2.StartTournamentRequest,
        context: grpc.aio.ServicerContext,
    ) -> tournament_pb2.StartTournamentResponse:
        caller = current_identity()
        loaded = await self._load(request.tournament_id)
        if not _is_host(loaded, caller):
            raise _denied("only the host starts the tournament")
        after, _ = await self.tournaments.step(
            loaded.tournament_id, lambda state: engine.Start(at_ms=self.tournaments.clock()))
        return tournament_pb2.StartTournamentResponse(tournament=after.summary)

    async def GetStandings(
        self, request: tournament_pb2.GetStandingsRequest, context: grpc.aio.ServicerContext
    ) -> tournament_pb2.GetStandingsResponse:
        loaded = await self._load(request.tournament_id)
        return tournament_pb2.GetStandingsResponse(
            tournament=loaded.summary, standings=standings_of(
                loaded.state, await self.tournaments.names_of(loaded.tournament_id)))

    async def WatchStandings(
        self, request: tournament_pb2.WatchStandingsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[tournament_pb2.WatchStandingsResponse]:
        loaded = await self._load(request.tournament_id)
        live = self.bus.live(loaded.tournament_id) if self.bus is not None else None
        try:
            if live is not None:
                with contextlib.suppress(Exception):  # a bus that is down: polling only
                    await live.ensure_subscribed()
            sent_seq = -1
            while True:
                raise_if_cancelling()  # wait_for below may swallow a client's cancel
                loaded = await self.tournaments.load(loaded.tournament_id)
                if loaded.state.seq != sent_seq:
                    sent_seq = loaded.state.seq
                    names = await self.tournaments.names_of(loaded.tournament_id)
                    yield tournament_pb2.WatchStandingsResponse(
                        tournament=loaded.summary, standings=standings_of(loaded.state, names))
                if loaded.state.is_over:
                    return
                await self._next_change(live)
        finally:
            if live is not None:
                await live.aclose()

    @staticmethod
    async def _next_change(live: AsyncIterator[object] | None) -> None:
        if live is None:
            await asyncio.sleep(WATCH_POLL_SECONDS)
            return
        with contextlib.suppress(TimeoutError, StopAsyncIteration):
            await asyncio.wait_for(anext(live), WATCH_POLL_SECONDS)

    async def GetCurrentTable(
        self, request: tournament_pb2.GetCurrentTableRequest,
        context: grpc.aio.ServicerContext,
    ) -> tournament_pb2.GetCurrentTableResponse:
        caller = current_identity()
        player = caller.player_id
        if request.player_id and request.player_id != caller.player_id:
            if not caller.is_privileged:
                raise _denied("only services and admins ask for another player's table")
            player = request.player_id
        loaded = await self._load(request.tournament_id)
        state = loaded.state
        reply = tournament_pb2.GetCurrentTableResponse(tournament=loaded.summary)
        table = state.player_table(player) if state.phase is engine.Phase.RUNNING else None
        if table is None or table.table in state.results:
            return reply
        reply.game_id = options.game_id_of(loaded.tournament_id, state.round, table.table)
        reply.seat = next(index for index, seat in enumerate(table.seats)
                          if seat.player_id == player)
        reply.round = state.round
        reply.table = table.table
        reply.round_deadline_ms = state.deadline_ms
        return reply

    async def ListTournaments(
        self, request: tournament_pb2.ListTournamentsRequest,
        context: grpc.aio.ServicerContext,
    ) -> tournament_pb2.ListTournamentsResponse:
        size = min(request.page_size or request.limit or DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)
        query = ListingQuery(status=request.status, game_type=request.game_type,
                             by_operator=request.created_by_operator)
        after = self.page_tokens.read(request.page_token, query)
        # One more than the page: whether a next page exists, without a second query.
        listed = await asyncio.to_thread(self.tournaments.store.listed, query, size + 1, after)
        reply = tournament_pb2.ListTournamentsResponse(
            tournaments=[item.summary for item in listed[:size]])
        if len(listed) > size:
            reply.next_page_token = self.page_tokens.make(query, listed[size - 1].position)
        return reply
