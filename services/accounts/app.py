"""Wiring of the accounts service: its gRPC servicer over its store.

The composition root (:mod:`services.compose`) mounts it with :func:`mount_accounts_service`::

    accounts = mount_accounts_service(server, AccountsStore.open(url),
                                      signer=keys.signer("accounts"), ring=keys.ring,
                                      oidc_providers=settings.oidc_providers)

The service keeps nothing in memory between calls: any number of replicas serve the same
tables.
"""

from __future__ import annotations

import grpc

from dast.v1 import accounts_pb2, accounts_pb2_grpc, moderation_pb2, moderation_pb2_grpc
from services.accounts.moderation import Moderation, ModerationService
from services.accounts.moderation_store import ModerationStore
from services.accounts.oidc_providers import parse_providers
from services.accounts.retention import GuestRetention
from services.accounts.service import AccountsService
from services.accounts.sessions import Sessions, TokenPolicy
from services.accounts.store import AccountsStore
from services.platform.auth import TokenKeyRing, TokenSigner
from services.platform.bans import Bans, InProcessBans
from services.platform.clock import Clock, wall_clock_ms
from services.platform.revocations import Revocations

SERVICE_NAME = accounts_pb2.DESCRIPTOR.services_by_name["AccountsService"].full_name
MODERATION_SERVICE_NAME = moderation_pb2.DESCRIPTOR.services_by_name[
    "ModerationService"].full_name
SERVICE_NAMES = (SERVICE_NAME, MODERATION_SERVICE_NAME)


def mount_accounts_service(server: grpc.aio.Server, store: AccountsStore, *,
                           signer: TokenSigner, ring: TokenKeyRing,
                           policy: TokenPolicy | None = None, oidc_providers: str = "",
                           revocations: Revocations | None = None,
                           moderation_store: ModerationStore | None = None,
                           bans: Bans | None = None, guest_idle_days: float = 10.0,
                           clock: Clock = wall_clock_ms) -> AccountsService:
    """Add the accounts service over ``store`` to ``server``, its tokens signed by
    ``signer`` (the lobby's guest tokens it takes checked against ``ring``) and living as
    ``policy`` says, signing in with ID tokens of the providers ``oidc_providers`` lists
    (``DAST_OIDC_PROVIDERS``), publishing the sessions it ends to ``revocations``; and the
    moderation service over ``moderation_store`` (a private in-memory one by default)
    publishing bans to ``bans``; return the accounts servicer (its :attr:`moderation` runs
    the bans' republishing, :meth:`~services.accounts.moderation.Moderation.run`, and its
    :attr:`retention` erases guests idle ``guest_idle_days``,
    :meth:`~services.accounts.retention.GuestRetention.run`).

    :raises services.platform.config.ConfigError: for an invalid ``oidc_providers``.
    """
    sessions = Sessions(store, signer, ring, policy=policy, clock=clock,
                        revocations=revocations)
    moderation = Moderation(moderation_store or ModerationStore.open(None), sessions,
                            bans or InProcessBans(clock=clock))
    sessions.admit = moderation.admit
    service = AccountsService(sessions, parse_providers(oidc_providers))
    service.moderation = moderation
    service.retention = GuestRetention(moderation, idle_days=guest_idle_days)
    accounts_pb2_grpc.add_AccountsServiceServicer_to_server(service, server)
    moderation_pb2_grpc.add_ModerationServiceServicer_to_server(
        ModerationService(moderation), server)
    return service
