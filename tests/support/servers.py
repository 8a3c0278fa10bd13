"""Private servers a test may stop, crash and start again: nats-server and PostgreSQL.

The machine's own NATS and PostgreSQL are shared by every test; a test that restarts one
(outage tests, the reliability suite) starts its own on a free loopback port instead, from
the same Debian binaries, with its data in the test's temporary directory.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final

NATS_SERVER: Final = shutil.which("nats-server") or "/usr/sbin/nats-server"
POSTGRES_BIN_ROOT: Final = Path("/usr/lib/postgresql")
POSTGRES_USER: Final = "postgres"
"""The system account PostgreSQL runs as when the test runs as root (initdb refuses root)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def wait_port(port: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if port_open(port):
            return True
        time.sleep(0.1)
    return False


class PrivateNats:
    """A nats-server (JetStream, own store dir) on a free loopback port, stoppable."""

    def __init__(self, store_dir: Path) -> None:
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.store_dir = store_dir
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process is not None else None

    def start(self) -> None:
        """Start the server (same port and store) and wait until it accepts connections."""
        if self.running:
            return
        self._process = subprocess.Popen(
            [NATS_SERVER, "-a", "127.0.0.1", "-p", str(self.port), "-js",
             "-sd", str(self.store_dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        if not wait_port(self.port, seconds=15):
            self.stop()
            raise RuntimeError(f"nats-server did not listen on port {self.port}")

    def stop(self) -> None:
        """Shut the server down cleanly (SIGTERM flushes JetStream's store)."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL server's bin directory (Debian's layout), if any."""
    if not POSTGRES_BIN_ROOT.is_dir():
        return None
    versions = sorted((path for path in POSTGRES_BIN_ROOT.iterdir()
                       if (path / "bin" / "initdb").exists()),
                      key=lambda path: [int(part) for part in path.name.split(".")
                                        if part.isdigit()])
    return versions[-1] / "bin" if versions else None


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own (initdb in a new directory) on a free port.

    :meth:`crash` stops it with ``immediate`` mode: no checkpoint, every connection cut,
    recovery from the WAL at the next :meth:`start`, as after a power cut or a killed pod.
    """

    def __init__(self) -> None:
        found = postgres_bin()
        if found is None:
            raise RuntimeError(f"no PostgreSQL server under {POSTGRES_BIN_ROOT}")
        self.bin = found
        self.port = free_port()
        # Its own directory under the system's temporary root: the server's account must
        # reach it, which a test's private (0700) temporary directory would not let it.
        self.base_dir = Path(tempfile.mkdtemp(prefix="dast-postgres-"))
        os.chmod(self.base_dir, 0o755)
        self.data_dir = self.base_dir / "data"
        self.run_dir = self.base_dir / "run"
        """The server's socket and log."""
        self.url = f"postgresql+psycopg://{POSTGRES_USER}@127.0.0.1:{self.port}/postgres"
        self._as_other_user = os.geteuid() == 0

    @property
    def log_path(self) -> Path:
        return self.run_dir / "postgres.log"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        command = [str(self.bin / args[0]), *args[1:]]
        if self._as_other_user:
            command = ["runuser", "-u", POSTGRES_USER, "--", *command]
        done = subprocess.run(command, check=False, capture_output=True, timeout=120)
        if check and done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): "
                               f"{done.stderr.decode(errors='replace')[-1000:]}")
        return done

    def initialise(self) -> None:
        for directory in (self.data_dir, self.run_dir):
            directory.mkdir(parents=True, exist_ok=True)
            if self._as_other_user:
                account = pwd.getpwnam(POSTGRES_USER)
                os.chown(directory, account.pw_uid, account.pw_gid)
        self._run("initdb", "-D", str(self.data_dir), "-U", POSTGRES_USER,
                  "--auth=trust", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.run_dir} -c listen_addresses=127.0.0.1 "
                   "-c max_connections=200 -c fsync=on")
        self._run("pg_ctl", "-D", str(self.data_dir), "-o", options, "-w", "-t", "60",
                  "-l", str(self.log_path), "start")
        if not wait_port(self.port, seconds=30):
            raise RuntimeError(f"PostgreSQL did not listen on port {self.port}")

    def crash(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop",
                  check=False)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop", check=False)

    def remove(self) -> None:
        """Stop the server and delete its files."""
        self.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    @property
    def pids(self) -> list[int]:
        """The postmaster's pid and its children's (the CPU and crash accounting)."""
        pid_file = self.data_dir / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError, IndexError):
            return [int(pid_file.read_text().splitlines()[0])]
        return []
