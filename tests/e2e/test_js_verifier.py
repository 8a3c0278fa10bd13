"""Two verifiers, one verdict: `dast verify` (Python) and clients/verify-js (JavaScript, Node)
agree on a corpus of sealed exports of every variant and on every kind of tampering.

The JavaScript verifier is written from docs/verification.md alone, so agreement here shows
that the documented constructions (generator, deals, chain, seal) are the ones the server
uses. One Node process checks the whole corpus (`--json`, one line per file): 100 matches
of each of the seven variants (about 40 s), every one also checked by `dast verify`.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.core.logformat import load_log
from services.cli import app
from tests.e2e.log_corpus import VARIANTS, CorpusLog, Sealer, build_corpus, tamperings

ROOT = Path(__file__).resolve().parents[2]
VERIFY_JS = ROOT / "clients" / "verify-js" / "bin" / "dast-verify.mjs"
CORPUS_PER_VARIANT = 100
TAMPERED_PER_VARIANT = 1
"""Logs of each variant that every tampering is applied to."""
NODE = shutil.which("node")


def _node() -> str:
    if NODE is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("node is not installed (CI=true: .ci/run installs it)", pytrace=False)
        pytest.skip("node is not installed (apt-get install nodejs; .ci/run does)")
    return NODE


def _run_js(files: list[Path], public_key: bytes | None) -> dict[str, dict[str, object]]:
    args = [_node(), str(VERIFY_JS), "--json"]
    if public_key is not None:
        args += ["--public-key", base64.b64encode(public_key).decode()]
    done = subprocess.run([*args, *map(str, files)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode in (0, 1), done.stderr
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(reports) == len(files), done.stderr
    return {str(report["file"]): report for report in reports}


def _python_accepts(path: Path, public_key: bytes) -> bool:
    key = base64.b64encode(public_key).decode()
    result = CliRunner().invoke(app, ["verify", str(path), "--public-key", key])
    assert result.exit_code in (0, 1), result.output  # 2: the file did not even read
    return result.exit_code == 0


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / f"{name}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def _check_corpus(corpus: list[CorpusLog], directory: Path, public_key: bytes) -> None:
    untouched = [_write(directory, log.name, log.text) for log in corpus]
    tampered: dict[Path, str] = {}
    seen: Counter[str] = Counter()
    for log in corpus:
        if seen[log.variant] >= TAMPERED_PER_VARIANT:
            continue
        seen[log.variant] += 1
        for number, (what, text) in enumerate(tamperings(log.text)):
            tampered[_write(directory, f"{log.name}-t{number:02d}", text)] = what

    js = _run_js([*untouched, *tampered], public_key)

    for path in untouched:
        report = js[str(path)]
        assert report["ok"], (path.name, report["checks"])
        assert _python_accepts(path, public_key), path.name
    kinds: Counter[str] = Counter()
    for path, what in tampered.items():
        report = js[str(path)]
        assert not report["ok"], f"the JavaScript verifier accepts {path.name} ({what})"
        assert not _python_accepts(path, public_key), f"dast verify accepts {path.name} ({what})"
        checks = report["checks"]
        assert isinstance(checks, dict)
        failed = {name for name, verdict in checks.items() if verdict != "ok"}
        if what == "removed seal":
            assert failed == {"seal"}, (path.name, checks)
        if what.startswith("changed seed"):
            assert "commitment" in failed, (path.name, checks)
        if what == "edited dealt card, re-chained":
            # The chain is whole again: the deals and the seal give it away.
            assert failed == {"deals", "seal"}, (path.name, checks)
        if what.endswith("re-chained"):
            assert "chain" not in failed, (path.name, checks)
        kinds[what] += 1
    assert len(kinds) == 14 and min(kinds.values()) == TAMPERED_PER_VARIANT * len(VARIANTS)


_MARKERS = ("seatControl", "stockRestocked", "roundVoided", "pilesLaid", "kittyTaken",
            "pileCardsTaken", '"fromPile": true', '"randomPartners": true',
            "HAKEM_ROTATION_REDETERMINE", '"attempt": 2')
"""What the corpus must hold: seat control, Hand restocks and void rounds, the three- and
two-player deals (kitty, piles, pile cards, the pile's trump), random seating, a hakem drawn
in every round and an ace-in-five draw that needed a second deck."""


def _coverage(corpus: list[CorpusLog]) -> Counter[str]:
    """How many logs hold each construction the deals check walks through."""
    found: Counter[str] = Counter()
    for log in corpus:
        text = log.text
        for marker in _MARKERS:
            if marker in text:
                found[marker] += 1
    return found


def test_both_verifiers_accept_the_corpus_and_reject_every_tampering(tmp_path: Path) -> None:
    _node()
    sealer = Sealer()
    corpus = build_corpus(CORPUS_PER_VARIANT, sealer)
    assert len(corpus) == CORPUS_PER_VARIANT * len(VARIANTS)
    coverage = _coverage(corpus)
    missing = [marker for marker in _MARKERS if coverage[marker] == 0]
    assert not missing, f"no log of the corpus holds {missing}"
    _check_corpus(corpus, tmp_path, sealer.public_key)


def test_a_forged_seal_passes_only_without_the_servers_key(tmp_path: Path) -> None:
    """A rigged deal, re-chained and signed with the forger's own key: the seal holds under
    the file's key, the deals check catches it anyway, and the server's key refuses it."""
    _node()
    server, forger = Sealer(), Sealer()
    log = build_corpus(1, server)[0]
    rigged = next(text for what, text in tamperings(log.text)
                  if what == "edited dealt card, re-chained")
    rows = [json.loads(line) for line in rigged.splitlines()]
    entries = load_log(rigged).entries
    seal = forger.seal("game-forged", entries)
    rows[-1] = {"seal": {"gameId": seal.game_id, "seq": str(seal.seq),
                         "headHash": base64.b64encode(seal.head_hash).decode(),
                         "publicKey": base64.b64encode(seal.public_key).decode(),
                         "signature": base64.b64encode(seal.signature).decode()}}
    path = _write(tmp_path, "forged", "".join(json.dumps(row) + "\n" for row in rows))

    without_key = _run_js([path], None)[str(path)]
    checks = without_key["checks"]
    assert isinstance(checks, dict)
    assert checks["chain"] == "ok" and checks["seal"] == "ok"
    assert "round/1/deal" in str(checks["deals"])
    with_key = _run_js([path], server.public_key)[str(path)]
    assert isinstance(with_key["checks"], dict)
    assert "another key" in str(with_key["checks"]["seal"])
    assert not _python_accepts(path, server.public_key)
