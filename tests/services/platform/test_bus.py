"""The bus contract on the in-process bus and on NATS JetStream, plus NATS specifics."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import nats
import pytest

from services.platform.bus import Bus, InProcessBus, open_bus
from services.platform.bus_nats import NatsBus
from tests.conftest import NatsNames
from tests.services.platform.bus_contract import BusContract, Replica
from tests.services.platform.helpers import make_entries


class TestInProcessBus(BusContract):
    @pytest.fixture
    async def bus(self) -> AsyncIterator[Bus]:
        bus = InProcessBus()
        await bus.start()
        yield bus
        await bus.close()

    @pytest.fixture
    def replica(self, bus: Bus) -> Replica:
        async def same() -> Bus:
            return bus

        return same


class TestNatsBus(BusContract):
    @pytest.fixture
    async def bus(self, nats_bus_factory: Callable[..., Any]) -> Bus:
        bus: Bus = await nats_bus_factory()
        return bus

    @pytest.fixture
    def replica(self, nats_bus_factory: Callable[..., Any]) -> Replica:
        async def another() -> Bus:
            bus: Bus = await nats_bus_factory()
            return bus

        return another

    async def test_messages_carry_subject_and_msg_id(
        self, bus: Bus, nats_url: str, nats_names: NatsNames
    ) -> None:
        # docs/architecture.md "Event store and bus": subject dast.events.<game_type>.<game_id>,
        # Nats-Msg-Id = <game_id>:<seq>.
        await bus.publish("hokm", "g1", make_entries(1, 2))
        connection = await nats.connect(nats_url)
        try:
            js = connection.jetstream()
            stream = await js.stream_info(nats_names.stream)
            assert stream.config.subjects == [f"{nats_names.subject_prefix}.>"]
            assert (stream.config.duplicate_window or 0) >= 120
            assert stream.state.messages == 2
            message = await js.get_msg(nats_names.stream, 2)
            assert message.subject == f"{nats_names.subject_prefix}.hokm.g1"
            assert message.headers is not None
            assert message.headers["Nats-Msg-Id"] == "g1:2"
            assert message.data == make_entries(1, 2)[1].SerializeToString(deterministic=True)
        finally:
            await connection.close()


def test_open_bus_defaults_to_in_process_and_uses_nats_for_a_url() -> None:
    assert isinstance(open_bus(None), InProcessBus)
    assert isinstance(open_bus(""), InProcessBus)
    nats_bus = open_bus("nats://127.0.0.1:4222", stream="S", subject_prefix="p.events")
    assert isinstance(nats_bus, NatsBus)
    assert (nats_bus.stream, nats_bus.subject_prefix) == ("S", "p.events")
