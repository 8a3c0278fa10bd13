"""``dast play``'s client (services/cli/play): the bot levels it offers, and the figures of
a partnership game shown per team."""

from __future__ import annotations

import queue
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from dast.v1 import common_pb2, game_pb2, hand_pb2, hokm_pb2, lobby_pb2, log_pb2
from engine.core.protocol import BOT_LEVELS
from services.cli import app
from services.cli.play import LEVELS, LOBBY_HELP, Client, Options, render
from services.cli.play.session import Session

pytestmark = pytest.mark.timeout(60)
runner = CliRunner()


class FakeSession:
    """The calls of a :class:`Session` the client makes, answered from memory."""

    def __init__(self, views: list[game_pb2.GetViewResponse] | None = None,
                 events: list[log_pb2.Event] | None = None) -> None:
        self.player_id = "g-host"
        self.calls: list[tuple[str, Any]] = []
        self.views = list(views or [])
        self.events: queue.Queue[log_pb2.Event | None] = queue.Queue()
        for event in events or []:
            self.events.put(event)
        self.receipts = None

    def call(self, method: str, request: Any) -> Any:
        self.calls.append((method, request))
        table = lobby_pb2.Table(table_id="t1", seats=[lobby_pb2.Seat(seat=s) for s in range(4)])
        if method == "AddBot":
            table.seats[request.seat].is_bot = True
            table.seats[request.seat].display_name = "bot"
        return lobby_pb2.GetTableResponse(table=table)

    def follow(self, game_id: str, after_seq: int = 0) -> None:
        pass

    def view(self, game_id: str) -> game_pb2.GetViewResponse:
        return self.views.pop(0) if len(self.views) > 1 else self.views[0]

    def table_of_game(self, game_id: str) -> lobby_pb2.Table | None:
        return None


def _client(session: FakeSession, answers: list[str]) -> tuple[Client, list[str]]:
    said: list[str] = []
    pending = list(answers)
    client = Client(cast(Session, session), lambda prompt: pending.pop(0), said.append)
    return client, said


def test_the_client_offers_every_bot_level_of_the_registry_by_its_wire_value() -> None:
    assert list(LEVELS) == list(BOT_LEVELS)  # expert included, weakest first
    for name, value in LEVELS.items():
        assert lobby_pb2.BotLevel.Name(value) == f"BOT_LEVEL_{name.upper()}"
    assert f"bot SEAT [{'|'.join(BOT_LEVELS)}]" in LOBBY_HELP


def test_the_host_adds_an_expert_bot_and_is_told_the_levels_of_an_unknown_one() -> None:
    session = FakeSession()
    client, said = _client(session, ["bot 2 expert", "bot 3 master", "bot 1", "bot x basic",
                                     "start"])
    client.host(lobby_pb2.Table(table_id="t1"))
    assert said[0] == LOBBY_HELP and "expert" in said[0]
    added = [request for method, request in session.calls if method == "AddBot"]
    assert [(r.seat, r.level) for r in added] == [
        (2, lobby_pb2.BOT_LEVEL_EXPERT), (1, lobby_pb2.BOT_LEVEL_BASIC)]
    assert "no bot level 'master': choose random, greedy, basic, expert" in said
    assert "seat numbers are 0, 1, …" in said
    assert session.calls[-1][0] == "StartGame"


def test_a_table_is_created_with_the_bots_level_asked_for() -> None:
    for name, value in LEVELS.items():
        assert Client(cast(Session, FakeSession()), input, print).settings(
            Options(bots=name)).bot_level == value


def test_play_lists_every_level_and_refuses_an_unknown_one_before_connecting() -> None:
    shown = runner.invoke(app, ["play", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert shown.exit_code == 0
    assert "random, greedy, basic, expert" in " ".join(shown.output.split())
    refused = runner.invoke(app, ["play", "--bots", "master", "--server", "127.0.0.1:1"])
    assert refused.exit_code == 2
    assert "--bots: no bot level 'master'" in refused.output


def _hokm_view(players: int, **fields: Any) -> hokm_pb2.HokmView:
    variant = {4: hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, 3: hokm_pb2.HOKM_VARIANT_THREE_PLAYERS,
               2: hokm_pb2.HOKM_VARIANT_TWO_PLAYERS}[players]
    return hokm_pb2.HokmView(
        rules=hokm_pb2.HokmRules(variant=variant, target_score=7), round=3, hakem=0,
        players=[common_pb2.Player(player_id=f"p{s}", display_name=f"P{s}")
                 for s in range(players)], **fields)


def test_four_player_hokm_shows_team_scores_and_team_tricks() -> None:
    # docs/rules/hokm.md "Seats and teams": partners opposite share a score and their tricks.
    view = _hokm_view(4, seat=1, scores=[2, 5, 2, 5], tricks_won=[3, 1, 2, 4])
    text = render.hokm_screen(view, None, now_ms=0)
    assert "Scores: team 0+2:2 · team 1+3 (you):5" in text
    assert "Tricks: team 0+2:5 · team 1+3 (you):5" in text


def test_three_and_two_player_hokm_show_figures_per_seat() -> None:
    three = render.hokm_screen(_hokm_view(3, seat=2, scores=[1, 4, 0], tricks_won=[2, 0, 3]),
                               None, now_ms=0)
    assert "Scores: 0:1 1:4 2 (you):0" in three and "Tricks: 0:2 1:0 2 (you):3" in three
    two = render.hokm_screen(_hokm_view(2, seat=0, scores=[6, 3], tricks_won=[1, 1]),
                             None, now_ms=0)
    assert "Scores: 0 (you):6 1:3" in two


def _hand_view(partnerships: bool, totals: list[int]) -> hand_pb2.HandView:
    return hand_pb2.HandView(
        seat=0, rules=hand_pb2.HandRules(players=4, partnerships=partnerships, rounds=3),
        round=2, players=[common_pb2.Player(display_name=n) for n in "ABCD"], totals=totals)


def test_hand_with_partnerships_shows_team_totals_and_alone_per_seat() -> None:
    # docs/rules/hand.md "Partnerships": both partners show the team's total.
    together = render.hand_screen(_hand_view(True, [40, -30, 40, -30]), None, now_ms=0)
    assert "Totals: team 0+2 (you):40 · team 1+3:-30" in together
    alone = render.hand_screen(_hand_view(False, [40, -30, 12, 7]), None, now_ms=0)
    assert "Totals: 0 (you):40 1:-30 2:12 3:7" in alone


def test_round_and_match_lines_name_the_winning_team() -> None:
    teams = ((0, 2), (1, 3))
    ended = log_pb2.Event(seq=40, hokm=hokm_pb2.HokmEvent(round_ended=hokm_pb2.RoundEnded(
        round=2, winners=[1, 3], scores=[1, 3, 1, 3])))
    assert render.event_line(ended, teams) == (
        "Round 2 over: team 1+3 won · scores team 0+2:1 · team 1+3:3")
    assert render.event_line(ended) == "Round 2 over: seat 1, seat 3 won · scores 0:1 1:3 2:1 3:3"
    hand_ended = log_pb2.Event(seq=90, hand=hand_pb2.HandEvent(
        round_ended=hand_pb2.HandRoundEnded(round=1, totals=[-30, 55, -30, 55])))
    assert render.event_line(hand_ended, teams) == (
        "Round 1 over: totals team 0+2:-30 · team 1+3:55")


def test_a_partnership_match_ends_with_the_teams_final_scores() -> None:
    over = _hokm_view(4, seat=2, scores=[7, 4, 7, 4], tricks_won=[0, 0, 0, 0], winners=[0, 2],
                      phase=hokm_pb2.HOKM_PHASE_MATCH_OVER)
    events = [log_pb2.Event(seq=120, hokm=hokm_pb2.HokmEvent(
        match_ended=hokm_pb2.HokmMatchEnded(winners=[0, 2], scores=[7, 4, 7, 4])))]
    session = FakeSession([game_pb2.GetViewResponse(seq=120, hokm=over)], events)
    client, said = _client(session, [])
    client.play_match("g1")
    assert "Match over: team 0+2 won" in said
    assert said[-1] == "Match over: you win · final team 0+2 (you):7 · team 1+3:4"
