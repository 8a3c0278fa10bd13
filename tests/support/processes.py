"""Dast services as separate processes on loopback, for the tests and benches that break them.

The multi-process e2e tests, the reliability suite and the tournament bench all run one
``python -m services.compose`` process per service replica and kill (SIGKILL), pause
(SIGSTOP) and restart them with the same port and settings; this is that process.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tests.support.servers import port_open

ROOT: Final = Path(__file__).resolve().parents[2]


@dataclass
class ServiceProcess:
    """One ``python -m services.compose`` process serving ``service`` on ``port`` (named
    ``name`` in logs), which a test may kill, pause, resume and start again as it was."""

    name: str
    service: str
    port: int
    env: dict[str, str]
    log_path: Path
    popen: subprocess.Popen[bytes] | None = field(default=None, init=False)
    paused: bool = field(default=False, init=False)

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def start(self) -> None:
        env = {**self.env, "DAST_SERVICES": self.service, "DAST_LISTEN": f"127.0.0.1:{self.port}"}
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "services.compose"], cwd=ROOT, env=env,
                stdout=log, stderr=subprocess.STDOUT,
            )
        self.paused = False

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.popen is not None and self.running:
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(timeout=10)

    def pause(self) -> None:
        if self.popen is not None and self.running:
            self.popen.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.popen is not None and self.paused:
            self.popen.send_signal(signal.SIGCONT)
            self.paused = False

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.resume()
        self.popen.terminate()
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=10)

    async def listening(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.running:
                raise RuntimeError(f"{self.name} exited: {self.log_tail()}")
            if await asyncio.to_thread(port_open, self.port):
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"{self.name} did not listen on {self.port}: {self.log_tail()}")

    def log_tail(self, size: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-size:]
        return ""
