"""The short reliability run, part of ``make test``: every kind of fault once, under load.

The whole system runs as separate processes over a private nats-server and PostgreSQL;
bot matches of every variant, a person's match and idle watchers load it, hostile clients
attack it, and each kind of fault (a SIGKILL of every service, NATS restarted, PostgreSQL
crashed, a game replica paused past the presence grace period) hits it once. Afterwards
every match has finished, no event is lost or duplicated in SQL or JetStream, every log
verifies, every watcher saw its match without a gap, and every reply to a hostile request
had a documented status. ``make reliability`` runs the long version.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.reliability.report import render
from tests.reliability.run import RunOptions, run_suite
from tests.support.servers import NATS_SERVER, postgres_bin

pytestmark = pytest.mark.timeout(600)


def _servers_missing() -> str | None:
    if not os.path.exists(NATS_SERVER):
        return f"no nats-server at {NATS_SERVER}"
    if postgres_bin() is None:
        return "no PostgreSQL server binaries"
    return None


async def test_every_kind_of_fault_once_under_load_loses_nothing() -> None:
    missing = _servers_missing()
    if missing is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{missing} (CI=true: the servers are required)")
        pytest.skip(missing)
    options = RunOptions(matches=7, streams=40, hostile_calls=200, duration_s=0,
                         fault_gap_s=1.0, seed=7)
    # Its own directory, kept when the run fails (the processes' logs tell why).
    work_dir = Path(tempfile.mkdtemp(prefix="dast-reliability-"))
    print(f"reliability run in {work_dir}")
    result = await run_suite(options, work_dir)
    report = render(result, "make test")
    (work_dir / "reliability.md").write_text(report)
    print(report)

    assert result.problems == []
    findings = result.findings
    assert findings.matches > options.matches  # new ones started as others ended
    assert findings.finished == findings.matches
    assert (findings.lost, findings.duplicated, findings.unverifiable) == (0, 0, 0)
    assert findings.stats_checked
    assert findings.events > 100 * findings.matches // 4
    kinds = {fault.kind for fault in result.faults}
    assert {"restart:nats", "crash:postgres", "pause:game", "kill:game", "kill:bot",
            "kill:lobby"} <= kinds
    assert result.hostile_sent == options.hostile_calls
    assert findings.watcher_events > 0
    # Pausing the replica that held the person's stream handed the seat to a bot, in the
    # game's log, and the seat came back once the replica (and the stream) did.
    assert result.person_takeovers >= 1
    assert result.person_returns >= 1
    # The person on a Play stream played its match through the faults: every event and
    # outcome once, no command applied twice (result.problems holds any).
    assert result.play_person_moves > 0
    shutil.rmtree(work_dir, ignore_errors=True)
