"""``dast play --tournament ID``: enter a tournament and play each of its matches in turn.

Register (an entry made before counts; in a tournament of registered pairs, each partner
names the other with ``--partner``, in either order, and the pair is entered once both
have), wait for the start, then, round after round, ask
the tournament service for this player's table and play that match with the same screen
and prompt as a lobby match (:meth:`services.cli.play.Client.play_match`); between rounds,
and at the end, print the standings. A bye or an elimination just waits for the next round
or the end; a tournament called off before its start ends the command.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Protocol

import grpc

from dast.v1 import tournament_pb2, tournament_pb2_grpc
from services.platform.channels import CHANNEL_OPTIONS
from services.platform.errors import reason_of

POLL_SECONDS: Final = 1.0
STANDINGS_SHOWN: Final = 10
_ALREADY_IN: Final = frozenset({"tournament_already_registered",
                                "tournament_player_already_entered"})


class MatchPlayer(Protocol):
    """What plays one match in the terminal (the lobby client does)."""

    def play_match(self, game_id: str) -> None:
        """Play the match until it is over."""
        ...


def standings_lines(reply: tournament_pb2.GetStandingsResponse, me: str,
                    shown: int = STANDINGS_SHOWN) -> list[str]:
    """The top of the standings (and the caller's line wherever it is)."""
    lines = [f"Standings after round {reply.tournament.round}:"]
    for line in reply.standings:
        mine = _is_mine(line.player_id, me)
        if line.rank <= shown or mine:
            marker = "  <- you" if mine else ""
            name = "deleted player" if line.deleted else line.display_name
            lines.append(f"  {line.rank:>3}. {name:<24} {line.match_points:>3} pts"
                         f"  won {line.won}/{line.played}{marker}")
    return lines


def _is_mine(entrant_id: str, me: str) -> bool:
    """Whether the standings line of ``entrant_id`` is the player ``me``'s: their own, or
    their pair's (a registered pair's entrant id joins its members' ids with ``+``, which
    the lobby's player ids, ``g-`` and hex digits, never hold)."""
    return entrant_id == me or me in entrant_id.split("+")


def play_tournament(
    channel: grpc.Channel, player_id: str, tournament_id: str, client: MatchPlayer,
    say: Callable[[str], None], *,
    poll_seconds: float = POLL_SECONDS, sleep: Callable[[float], None] = time.sleep,
    partner_id: str = "",
) -> tournament_pb2.GetStandingsResponse:
    """Enter the tournament and play its matches until it ends; the final standings
    (``channel`` puts the player's access token on every call:
    :meth:`services.cli.play.session.Session.authorized`).

    In a tournament of registered pairs, ``partner_id`` asks to enter together with that
    player, who must name the caller in turn (before or after): until they do, this waits
    for them, and if the tournament starts first, it returns the standings without the pair.

    :raises grpc.RpcError: as the tournament service answers (other than "already in").
    """
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    awaiting_partner = False
    try:
        registered = stub.RegisterPlayer(
            tournament_pb2.RegisterPlayerRequest(tournament_id=tournament_id,
                                                 partner_id=partner_id), timeout=20)
        summary = registered.tournament
        awaiting_partner = registered.waiting_for_partner
        if awaiting_partner:
            say(f"Asked {partner_id} to enter {summary.settings.name or tournament_id} with "
                f"you: your pair is entered once they name you as their partner too "
                f"(--partner {player_id})")
        else:
            say(f"Entered {summary.settings.name or tournament_id} "
                f"({summary.entrants} entrants so far)")
    except grpc.RpcError as error:
        if (reason_of(error) or "") not in _ALREADY_IN:
            raise
        say(f"Already entered in {tournament_id}")
    played: set[str] = set()
    announced = ""
    waiting_said = ""
    while True:
        table = stub.GetCurrentTable(
            tournament_pb2.GetCurrentTableRequest(tournament_id=tournament_id), timeout=20)
        status = table.tournament.status
        if status == tournament_pb2.TOURNAMENT_STATUS_CANCELLED:
            say("The tournament was called off before its start.")
            called_off: tournament_pb2.GetStandingsResponse = stub.GetStandings(
                tournament_pb2.GetStandingsRequest(tournament_id=tournament_id), timeout=20)
            return called_off
        if awaiting_partner:
            field: tournament_pb2.GetStandingsResponse = stub.GetStandings(
                tournament_pb2.GetStandingsRequest(tournament_id=tournament_id), timeout=20)
            if any(_is_mine(line.player_id, player_id) for line in field.standings):
                say(f"{partner_id} named you too: your pair is entered")
                awaiting_partner = False
            elif status != tournament_pb2.TOURNAMENT_STATUS_REGISTERING:
                say(f"The tournament started without you: {partner_id} did not name you "
                    "as their partner.")
                return field
        if status == tournament_pb2.TOURNAMENT_STATUS_FINISHED:
            final: tournament_pb2.GetStandingsResponse = stub.GetStandings(
                tournament_pb2.GetStandingsRequest(tournament_id=tournament_id), timeout=20)
            say("The tournament is over.")
            for line in standings_lines(final, player_id):
                say(line)
            return final
        if table.game_id and table.game_id not in played:
            if table.game_id != announced:
                say(f"Round {table.round}, table {table.table + 1}: you sit at seat {table.seat}")
                announced = table.game_id
            try:
                client.play_match(table.game_id)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                # The table is drawn before its match exists (the tournament service creates
                # it through the game service, retrying while that is unreachable): wait.
                sleep(poll_seconds)
                continue
            played.add(table.game_id)
            standings = stub.GetStandings(
                tournament_pb2.GetStandingsRequest(tournament_id=tournament_id), timeout=20)
            for line in standings_lines(standings, player_id):
                say(line)
            waiting_said = ""
            continue
        waiting = ("Waiting for the start…"
                   if status == tournament_pb2.TOURNAMENT_STATUS_REGISTERING
                   else "Waiting for the next round…")
        if waiting != waiting_said:
            say(waiting)
            waiting_said = waiting
        sleep(poll_seconds)


def tournament_channel(target: str) -> grpc.Channel:
    """A channel to the tournament service at ``target`` (several replicas: balanced)."""
    return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
