"""The audit of one sealed 7-point Hokm match, in JavaScript (Node) and in Python.

- ``audit_ms_per_match_node``: clients/verify-js verifying the export (chain, seed
  commitment, every deal, the Ed25519 seal) in Node, CPU milliseconds per match after a
  warm-up run (``clients/verify-js/tools/bench-audit.mjs``, the process's CPU time);
- ``audit_ms_per_match_python``: what ``dast verify`` does for the same file (read it,
  :func:`engine.core.verification.verify_export`, which re-runs the whole match and checks
  the chain and the seal), CPU milliseconds per match;
- ``audit_node_vs_python``: their ratio (the figure to compare across machines).

CPU time, not wall time, and the two sides interleaved over ``--rounds`` rounds (the median
of each is reported), so that other work on a shared machine hits both alike. The match is
four ``greedy`` bots under the default rules (target 7). Usage:
``python bench/audit_js.py --json [--repeat 10] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.report import print_figures
from dast.v1 import hokm_pb2, log_pb2
from engine.core.chain import chain_log
from engine.core.logformat import dump_jsonl, load_log
from engine.core.seal import seal_message
from engine.core.verification import verify_export
from engine.hokm.sim import play_match

ROOT = Path(__file__).resolve().parent.parent
BENCH_AUDIT_JS = ROOT / "clients" / "verify-js" / "tools" / "bench-audit.mjs"


def sealed_match() -> str:
    """A sealed export of a 7-point four-player Hokm match between greedy bots."""
    seed = hashlib.sha256(b"bench/audit").digest()
    events = play_match(hokm_pb2.HokmRules(), seed, ["greedy"] * 4, 7)
    entries = chain_log(events)
    key = Ed25519PrivateKey.generate()
    last = entries[-1]
    seal = log_pb2.LogSeal(
        game_id="bench-audit", seq=last.event.seq, head_hash=last.hash,
        public_key=key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw),
        signature=key.sign(seal_message("bench-audit", last.event.seq, last.hash)),
    )
    return dump_jsonl(entries, seal)


def python_audit_ms(text: str, repeat: int) -> float:
    """CPU milliseconds per verification the way ``dast verify`` does it."""
    def verify() -> None:
        exported = load_log(text)
        assert exported.seal is not None
        verification = verify_export(exported.entries, exported.seal,
                                     trusted_key=exported.seal.public_key)
        assert verification.ok, verification.findings

    verify()  # warm-up, as on the Node side
    started = time.process_time()
    for _ in range(repeat):
        verify()
    return (time.process_time() - started) * 1000 / repeat


def node_audit_ms(text: str, repeat: int) -> float:
    """CPU milliseconds per verification by clients/verify-js in one Node process."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is not installed (apt-get install nodejs)")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "match.jsonl"
        path.write_text(text, encoding="utf-8")
        done = subprocess.run([node, str(BENCH_AUDIT_JS), str(path), str(repeat)],
                              capture_output=True, text=True, check=True, timeout=600)
    return float(json.loads(done.stdout)["cpu_ms_per_log"])


def measure_audit(repeat: int = 10, rounds: int = 5) -> dict[str, Any]:
    """The keys of the module's docstring."""
    text = sealed_match()
    node_runs, python_runs = [], []
    for _ in range(rounds):
        node_runs.append(node_audit_ms(text, repeat))
        python_runs.append(python_audit_ms(text, repeat))
    node, python = statistics.median(node_runs), statistics.median(python_runs)
    return {
        "audit_ms_per_match_node": round(node, 2),
        "audit_ms_per_match_python": round(python, 2),
        "audit_node_vs_python": round(node / python, 3),
        "audit_match_events": len(load_log(text).entries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=10,
                        help="timed verifications per side and round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()
    result = measure_audit(args.repeat, args.rounds)
    print_figures(result, as_json=args.json, width=28)


if __name__ == "__main__":
    main()
