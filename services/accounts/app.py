"""Wiring of the accounts service: its gRPC servicer over its store.

The composition root (:mod:`services.compose`) mounts it with :func:`mount_accounts_service`::

    accounts = mount_accounts_service(server, AccountsStore.open(url), secret=secret)

The service keeps nothing in memory between calls: any number of replicas serve the same
tables.
"""

from __future__ import annotations

import grpc

from dast.v1 import accounts_pb2, accounts_pb2_grpc
from services.accounts.service import AccountsService
from services.accounts.sessions import Sessions, TokenPolicy
from services.accounts.store import AccountsStore
from services.platform.clock import Clock, wall_clock_ms

SERVICE_NAME = accounts_pb2.DESCRIPTOR.services_by_name["AccountsService"].full_name


def mount_accounts_service(server: grpc.aio.Server, store: AccountsStore, *, secret: str,
                           policy: TokenPolicy | None = None,
                           clock: Clock = wall_clock_ms) -> AccountsService:
    """Add the accounts service over ``store`` to ``server``, its tokens signed with
    ``secret`` and living as ``policy`` says; return the servicer."""
    service = AccountsService(Sessions(store, secret, policy=policy, clock=clock))
    accounts_pb2_grpc.add_AccountsServiceServicer_to_server(service, server)
    return service
