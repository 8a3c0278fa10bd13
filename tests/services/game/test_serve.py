"""``dast serve`` from an empty directory: embedded defaults, health, reflection, metrics,
and a clean stop on SIGTERM (docs/architecture.md "gRPC surface": health checking and reflection on
every server)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.services.game.helpers import ROOT


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_dast_serve_runs_embedded_from_an_empty_directory(tmp_path: Path) -> None:
    metrics_port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("DAST_")}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [sys.executable, "-c", "from services.cli import main; main()", "serve",
         "--listen", "127.0.0.1:0", "--metrics-port", str(metrics_port)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert process.stdout is not None
        banner = [process.stdout.readline() for _ in range(7)]
        address = re.search(r"listening on ([\d.]+:\d+)", banner[0])
        assert address, banner
        # It says where it keeps its data and how to reach it (with a development token).
        assert "sqlite" in banner[1] and str(tmp_path) in banner[1]
        assert "grpcurl -plaintext" in banner[3]
        assert any("authorization: Bearer" in line for line in banner)
        with grpc.insecure_channel(address[1]) as channel:
            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="dast.v1.GameService"), timeout=5
            )
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            reply = next(reflection.ServerReflectionInfo(iter([request]), timeout=5))
            names = {service.name for service in reply.list_services_response.service}
            # `dast serve` with no options runs every service (game, lobby, bots, timers).
            assert {"dast.v1.GameService", "dast.v1.LobbyService",
                    "grpc.health.v1.Health"} <= names
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics") as page:
            assert b"dast_command_seconds" in page.read()
        assert (tmp_path / ".dast" / "dast.db").exists()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0

