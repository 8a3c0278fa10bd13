"""The console's parts without a stack: where it reaches the services, which services a
process runs, the hour's readings and rates, the charts' geometry, the sessions."""

from __future__ import annotations

import pytest

from services.compose import KNOWN_SERVICES, parse_services
from services.console.backend import ConsoleTargets, TargetsError
from services.console.charts import bar_chart, histogram, line_chart
from services.console.sampler import History
from services.console.sessions import Sessions, SignInRefused
from services.platform.auth import Role
from tests.support.tokens import TEST_KEYS, token


def test_targets_name_each_service_or_fall_back_and_refuse_what_they_cannot_use() -> None:
    targets = ConsoleTargets.parse(
        " game=ipv4:10.0.0.1:50051,10.0.0.2:50051 ; lobby=dast-lobby:50051;", default="x:1")
    assert targets.by_service == {"game": "ipv4:10.0.0.1:50051,10.0.0.2:50051",
                                  "lobby": "dast-lobby:50051", "accounts": "x:1",
                                  "stats": "x:1", "tournament": "x:1"}
    assert targets.replicas("game") == ["10.0.0.1:50051", "10.0.0.2:50051"]
    assert targets.replicas("lobby") == ["dast-lobby:50051"]
    for text, says in [("chat=x:1", "unknown service 'chat'"), ("game", "is not service=target"),
                       ("game=", "is not service=target")]:
        with pytest.raises(TargetsError, match=says):
            ConsoleTargets.parse(text, default="x:1")
    with pytest.raises(TargetsError, match="names no target for accounts"):
        ConsoleTargets.parse("game=a:1;lobby=b:1;stats=c:1;tournament=d:1")


def test_all_leaves_the_console_out_unless_it_is_named() -> None:
    assert parse_services("all") == list(KNOWN_SERVICES)
    assert parse_services("all,console") == [*KNOWN_SERVICES, "console"]
    assert parse_services("console") == ["console"]
    with pytest.raises(ValueError, match="known: all, game"):
        parse_services("consol")


def test_the_hour_keeps_an_hour_and_rates_count_a_restart_from_zero() -> None:
    now = [1000.0]
    history = History(now=lambda: now[0])
    assert history.latest_rate() is None
    for value in (100, 160, 40):  # the third reading: a replica restarted at 0
        history.add(value)
        now[0] += 10
    assert history.rates() == [(-20.0, 6.0), (-10.0, 4.0)]
    now[0] += 3600
    history.add(50)
    assert history.levels() == [(0.0, 50.0)]


def test_charts_scale_to_their_largest_value() -> None:
    bars = bar_chart("t", [1.0, 4.0], ["a", "b"])
    assert bars.top == "4" and bars.bars[1].height == 4 * bars.bars[0].height
    assert [bar.value for bar in histogram("h", [0.0, 0.5, 10.0], bins=2).bars] == ["2", "1"]
    assert [bar.label for bar in histogram("h", [0.25, 0.75], bins=10).bars] == ["0.2", "0.5"]
    assert histogram("h", []).bars == ()
    line = line_chart("l", [(-10.0, 0.0), (0.0, 2.5)], "10 s ago", "now")
    assert line.latest == "2.5" and line.points.count(",") == 2
    assert line_chart("l", [], "", "now").points == ""


def test_a_session_lasts_as_long_as_its_token_and_only_admins_open_one() -> None:
    now = [1_000.0]
    sessions = Sessions(TEST_KEYS.ring, now=lambda: now[0])
    with pytest.raises(SignInRefused, match="paste an operator"):
        sessions.sign_in("  ")
    with pytest.raises(SignInRefused, match="player token"):
        sessions.sign_in(token("p-1", Role.PLAYER))
    with pytest.raises(SignInRefused, match="not a valid dast token"):
        sessions.sign_in("Bearer not.a.token")
    session = sessions.sign_in("Bearer " + token("op", Role.ADMIN))
    assert sessions.get(session.session_id) == session
    assert sessions.any_token() == session.token
    assert not session.csrf_matches("") and session.csrf_matches(session.csrf)
    now[0] = session.expires_at
    assert sessions.get(session.session_id) is None and sessions.any_token() is None
