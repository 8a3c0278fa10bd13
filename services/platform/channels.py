"""Client channels between services: one target, any number of replicas behind it.

A process that calls another service (the lobby and the bots call the game service) names
it by a gRPC target. ``127.0.0.1:50051`` is one server; ``ipv4:127.0.0.1:50061,127.0.0.1:50062``
(or a DNS name resolving to several addresses) is a set of replicas, and the ``round_robin``
policy spreads calls over every address that is up, reconnecting to one that comes back, so
a replica that dies costs only the calls in flight on it (callers retry those).
"""

from __future__ import annotations

from typing import Final

import grpc

CHANNEL_OPTIONS: Final = (
    ("grpc.lb_policy_name", "round_robin"),
    # A killed replica's address is retried quickly once it listens again.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2_000),
    # A replica that froze (a long pause, a starved VM) keeps its connections open but
    # answers nothing: pings find it within seconds, and round_robin stops sending it calls
    # until it answers again. The servers accept pings this often (server.py).
    ("grpc.keepalive_time_ms", 5_000),
    ("grpc.keepalive_timeout_ms", 2_000),
    ("grpc.keepalive_permit_without_calls", 1),
)


def service_channel(target: str) -> grpc.aio.Channel:
    """An insecure (loopback or mesh) channel to ``target``, balanced over its addresses."""
    return grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
