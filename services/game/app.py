"""Wiring of the game service into a gRPC server (used by ``dast serve`` and the tests)."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from dast.v1 import audit_pb2_grpc, game_pb2, game_pb2_grpc, replay_pb2_grpc
from services.game.audit import SERVICE_NAME as AUDIT_SERVICE_NAME
from services.game.audit import AuditService
from services.game.replay import SERVICE_NAME as REPLAY_SERVICE_NAME
from services.game.replay import ReplayService
from services.game.repository import GameRepository
from services.game.service import GameService
from services.platform.bus import Bus
from services.platform.clock import wall_clock_ms
from services.platform.keys import LogSigner
from services.platform.metrics import GameMetrics, game_metrics
from services.platform.presence_kv import StreamPresence
from services.platform.store import EventStore

SERVICE_NAME = game_pb2.DESCRIPTOR.services_by_name["GameService"].full_name
SERVICE_NAMES = (SERVICE_NAME, REPLAY_SERVICE_NAME, AUDIT_SERVICE_NAME)
"""Every gRPC service :func:`mount_game_service` adds (the game service's process owns
the event store, so replay and audit are served beside it)."""


def mount_game_service(
    server: grpc.aio.Server,
    store: EventStore,
    bus: Bus,
    notify: Callable[[], None],
    *,
    metrics: GameMetrics | None = None,
    clock: Callable[[], int] = wall_clock_ms,
    signer: LogSigner | None = None,
    presence: StreamPresence | None = None,
) -> GameService:
    """Add a :class:`GameService` over ``store`` and ``bus`` to ``server``, with the
    :class:`ReplayService` and :class:`AuditService` over the same store; return it.

    ``notify`` wakes the relay after each append (so events reach the bus at once);
    ``signer`` seals finished logs (None: a key made for this service alone); ``presence``
    hears of seated players' streams (a :class:`~services.platform.presence_kv.PresenceReporter`).
    Whether a match admits spectators is the game's own setting, given to ``CreateGame``.
    """
    repository = GameRepository(store)
    service = GameService(
        repository, bus, notify, metrics or game_metrics(), clock=clock, signer=signer,
        presence=presence,
    )
    game_pb2_grpc.add_GameServiceServicer_to_server(service, server)
    replay_pb2_grpc.add_ReplayServiceServicer_to_server(ReplayService(repository), server)
    audit_pb2_grpc.add_AuditServiceServicer_to_server(
        AuditService(repository, service.signer), server
    )
    return service
