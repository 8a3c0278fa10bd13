"""Every NATS name of a deployment from its one name (services/platform/nats_names.py;
docs/deploy.md "Several deployments on one NATS"). The end-to-end check that two
deployments on one server never touch each other is tests/e2e/test_deployments_apart.py."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dast.v1 import log_pb2
from services.platform.bus_nats import NatsBus
from services.platform.config import RETIRED_SETTINGS, ConfigError, load_settings
from services.platform.nats_names import DEFAULT_DEPLOYMENT, NatsNames
from services.platform.presence_kv import NatsPresenceBoard, PresenceRecord
from services.platform.table_feed import NatsTableFeed
from services.tournament.app import tournaments_bus
from tests.conftest import delete_streams

pytestmark = pytest.mark.timeout(60)

DEPLOYMENTS = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,47}", fullmatch=True)


def _names(names: NatsNames) -> set[str]:
    """The stream and bucket names of a deployment."""
    return {names.events_stream, names.tables_stream, names.tournaments_stream,
            names.chat_stream, names.presence_bucket, names.revoked_bucket,
            names.banned_bucket}


def _subjects(names: NatsNames) -> set[str]:
    return {names.events_prefix, names.tables_prefix, names.tournaments_prefix,
            names.chat_prefix}


def test_the_default_deployment_keeps_the_names_dast_used_before() -> None:
    # An existing deployment upgrades onto its own streams, consumers and bucket.
    names = load_settings().nats_names()
    assert names.deployment == DEFAULT_DEPLOYMENT == "dast"
    assert (names.events_stream, names.events_prefix) == ("DAST_EVENTS", "dast.events")
    assert (names.tables_stream, names.tables_prefix) == ("DAST_TABLES", "dast.tables")
    assert (names.tournaments_stream, names.tournaments_prefix) == (
        "DAST_EVENTS_TOURNAMENTS", "dast.events_tournaments")
    assert names.presence_bucket == "DAST_PRESENCE"
    assert names.revoked_bucket == "DAST_REVOKED"
    assert names.banned_bucket == "DAST_BANNED"
    assert (names.chat_stream, names.chat_prefix) == ("DAST_CHAT", "dast.chat")


@pytest.mark.parametrize(("first", "second"), [
    ("a", "a_events"), ("a", "a_tables"), ("a_events", "a_events_tournaments"),
    ("staging", "staging-2"), ("dast", "dast_presence"), ("x", "x_events_tournaments"),
    ("dast", "dast_revoked"), ("a", "a_chat"),
])
def test_deployments_whose_names_look_alike_still_share_no_name(first: str,
                                                                 second: str) -> None:
    one, other = NatsNames(first), NatsNames(second)
    assert not _names(one) & _names(other)
    # JetStream refuses streams whose subjects overlap: the first tokens differ.
    assert {s.split(".")[0] for s in _subjects(one)} == {first}
    assert {s.split(".")[0] for s in _subjects(other)} == {second}


@given(DEPLOYMENTS, DEPLOYMENTS)
def test_two_deployments_never_share_a_stream_a_bucket_or_a_subject(first: str,
                                                                    second: str) -> None:
    one, other = NatsNames(first), NatsNames(second)
    if first == second:
        assert _names(one) == _names(other)
        return
    assert not _names(one) & _names(other)
    assert not _subjects(one) & _subjects(other)
    for mine, theirs in itertools.product(_subjects(one), _subjects(other)):
        assert mine.split(".")[0] != theirs.split(".")[0]  # no filter of one matches the other


@pytest.mark.parametrize("name", [
    "", "Dast", "a.b", "a*", "a>", "a b", "-a", "_a", "a/b", "dast\n", "x" * 49, "déploi",
])
def test_a_deployment_name_nats_cannot_carry_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="DAST_DEPLOYMENT"):
        load_settings(deployment=name)
    with pytest.raises(ValueError, match="deployment name"):
        NatsNames(name)


@pytest.mark.parametrize("retired", RETIRED_SETTINGS)
def test_the_former_stream_settings_are_refused_rather_than_ignored(
    retired: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ignoring one would move a deployment onto other streams without a word.
    monkeypatch.setenv(retired, "MY_EVENTS")
    with pytest.raises(ConfigError, match=f"{retired} no longer exist.*DAST_DEPLOYMENT"):
        load_settings()


def test_the_tournaments_bus_is_the_deployments_own() -> None:
    settings = load_settings(deployment="staging", nats_url="nats://127.0.0.1:4222")
    bus = tournaments_bus(settings)
    assert isinstance(bus, NatsBus)
    assert (bus.stream, bus.subject_prefix) == ("STAGING_EVENTS_TOURNAMENTS",
                                                "staging.events_tournaments")


async def test_nats_accepts_every_name_of_a_deployment_with_dashes_and_underscores(
    nats_url: str,
) -> None:
    names = NatsNames(f"t-{uuid.uuid4().hex[:8]}_x")
    bus = NatsBus(nats_url, stream=names.events_stream, subject_prefix=names.events_prefix)
    tournaments = NatsBus(nats_url, stream=names.tournaments_stream,
                          subject_prefix=names.tournaments_prefix)
    feed = NatsTableFeed(nats_url, stream=names.tables_stream,
                         subject_prefix=names.tables_prefix)
    board = NatsPresenceBoard(nats_url, bucket=names.presence_bucket, ttl_ms=60_000)
    try:
        await bus.start()
        await tournaments.start()
        await feed.start()
        await board.start()
        entry = log_pb2.LogEntry(event=log_pb2.Event(seq=1))
        await bus.publish("hokm", "g1", [entry])
        assert await bus.last_published_seq("hokm", "g1") == 1
        assert await tournaments.last_published_seq("hokm", "g1") == 0  # a stream apart
        await board.publish(PresenceRecord("g1", "r1", at_ms=1))
    finally:
        for closing in (bus, tournaments, feed, board):
            await closing.close()
        await delete_streams(nats_url, names)
