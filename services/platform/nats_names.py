"""Every NATS name a deployment uses, derived from its one name (``DAST_DEPLOYMENT``).

Several deployments may share a NATS server (a staging and a production stack, two local
stacks, test runs): each has its own database, and must see none of another's games,
events, tables or seats. So every name the services give NATS starts from the deployment
name ``d`` (``D`` is ``d`` in capitals):

==========================  =============================  ===============================
what                        stream / bucket                subjects
==========================  =============================  ===============================
the games' events           ``D_EVENTS``                   ``d.events.<game_type>.<id>``
the lobby's table updates   ``D_TABLES``                   ``d.tables.<table_id>``
the tournaments' events     ``D_EVENTS_TOURNAMENTS``       ``d.events_tournaments.…``
players' presence           key-value ``D_PRESENCE``       (``$KV.D_PRESENCE.<key>``)
revoked sessions            key-value ``D_REVOKED``        (``$KV.D_REVOKED.<session>``)
banned players              key-value ``D_BANNED``         (``$KV.D_BANNED.<player>``)
the tables' talk            ``D_CHAT``                     ``d.chat.<table_id>.<sender>``
talkers' send windows       key-value ``D_CHAT_RATE``      (``$KV.D_CHAT_RATE.<sender>``)
==========================  =============================  ===============================

Durable consumers (``lobby``, ``stats``, ``bots``, ``timers``, ``tournaments``) live inside
their stream: JetStream names them with it (``$JS.API.CONSUMER.INFO.D_EVENTS.lobby``), so
they are the deployment's own too. The services make no core request/reply calls of their
own: they call each other over gRPC.

The default deployment, ``dast``, has the names dast used before deployments had names
(``DAST_EVENTS``, ``dast.events.…``, ``DAST_PRESENCE``), so an existing deployment keeps its
streams, consumers and bucket. A deployment name is lower-case so that its capitalised form
names no other deployment's streams; every name above then ends with a different suffix, so
two deployments' names never meet, and no subject of one overlaps another's (JetStream
refuses overlapping streams).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

DEFAULT_DEPLOYMENT: Final = "dast"
MAX_DEPLOYMENT_CHARS: Final = 48
"""Longest deployment name: its streams' names stay far below NATS's limits."""
_DEPLOYMENT: Final = re.compile(r"[a-z0-9][a-z0-9_-]*")
"""Lower-case letters, digits, ``_`` and ``-``: one subject token, and a valid part of a
stream or bucket name."""


def deployment_problem(name: str) -> str | None:
    """Why ``name`` cannot name a deployment (None when it can).

    >>> deployment_problem("staging-2") is None
    True
    >>> deployment_problem("a.b")
    'must be lower-case letters, digits, "_" and "-", starting with a letter or digit'
    """
    if len(name) > MAX_DEPLOYMENT_CHARS:
        return f"has more than {MAX_DEPLOYMENT_CHARS} characters"
    if not _DEPLOYMENT.fullmatch(name):
        return 'must be lower-case letters, digits, "_" and "-", starting with a letter or digit'
    return None


@dataclass(frozen=True, slots=True)
class NatsNames:
    """The streams, subjects and bucket of one deployment (see the module docstring).

    >>> NatsNames().events_stream, NatsNames().events_prefix
    ('DAST_EVENTS', 'dast.events')
    >>> NatsNames("staging").presence_bucket
    'STAGING_PRESENCE'

    :raises ValueError: if ``deployment`` is no valid deployment name.
    """

    deployment: str = DEFAULT_DEPLOYMENT

    def __post_init__(self) -> None:
        problem = deployment_problem(self.deployment)
        if problem is not None:
            raise ValueError(f"the deployment name {self.deployment[:MAX_DEPLOYMENT_CHARS]!r} "
                             f"{problem}")

    @property
    def _upper(self) -> str:
        return self.deployment.upper()

    @property
    def events_stream(self) -> str:
        """The JetStream stream of the games' events."""
        return f"{self._upper}_EVENTS"

    @property
    def events_prefix(self) -> str:
        """Its subjects: ``<prefix>.<game_type>.<game_id>``."""
        return f"{self.deployment}.events"

    @property
    def tables_stream(self) -> str:
        """The stream of the lobby's table updates."""
        return f"{self._upper}_TABLES"

    @property
    def tables_prefix(self) -> str:
        """Its subjects: ``<prefix>.<table_id>``."""
        return f"{self.deployment}.tables"

    @property
    def tournaments_stream(self) -> str:
        """The stream of the tournaments' events."""
        return f"{self.events_stream}_TOURNAMENTS"

    @property
    def tournaments_prefix(self) -> str:
        """Its subjects: ``<prefix>.tournament.<tournament_id>``."""
        return f"{self.events_prefix}_tournaments"

    @property
    def presence_bucket(self) -> str:
        """The key-value bucket where game replicas report their players' streams."""
        return f"{self._upper}_PRESENCE"

    @property
    def revoked_bucket(self) -> str:
        """The key-value bucket of ended sessions (:mod:`services.platform.revocations`)."""
        return f"{self._upper}_REVOKED"

    @property
    def banned_bucket(self) -> str:
        """The key-value bucket of banned players (:mod:`services.platform.bans`)."""
        return f"{self._upper}_BANNED"

    @property
    def chat_stream(self) -> str:
        """The stream of the tables' talk (:mod:`services.chat.talk_log`), whose age is
        the talk's retention."""
        return f"{self._upper}_CHAT"

    @property
    def chat_prefix(self) -> str:
        """Its subjects: ``<prefix>.<table_id>.<sender>`` (``p`` and the sender's id in hex)."""
        return f"{self.deployment}.chat"

    @property
    def streams(self) -> tuple[str, ...]:
        """Every stream of the deployment (a bucket's is ``KV_<bucket>``)."""
        return (self.events_stream, self.tables_stream, self.tournaments_stream,
                self.chat_stream, f"KV_{self.presence_bucket}", f"KV_{self.revoked_bucket}",
                f"KV_{self.banned_bucket}")
