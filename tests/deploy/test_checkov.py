"""checkov's Kubernetes policies over the rendered manifests (issue 14), offline.

Each overlay is rendered with ``kubectl kustomize`` (as in test_manifests.py) and scanned
once per session by checkov from its own virtualenv, tools/checkov/.venv (``make checkov``;
``make test`` makes it first): checkov pins packaging and termcolor below what the project's
.venv needs, so it cannot live there. The scan must report no failed check but the few
accepted in SKIPPED_CHECKS, each with its reason; a deliberately broken copy proves that the
scan catches what it should. Without the virtualenv the tests skip, except under
``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.test_manifests import K8S, OVERLAYS, REPO, Document, render

CHECKOV_VENV = REPO / "tools" / "checkov" / ".venv"
CHECKOV = CHECKOV_VENV / "bin" / "checkov"
CHECKOV_STAMP = CHECKOV_VENV / ".installed"
"""Written by the Makefile once the requirements are installed: a half-made venv lacks it."""
SCAN_TIMEOUT_SECONDS = 300

SKIPPED_CHECKS = {
    "CKV_K8S_43": "images by digest: the overlays pin a release tag; the digest of a release "
    "exists only once its image is built and pushed, so the release sets it (`kustomize edit "
    "set image ghcr.io/dast/dast@sha256:...` in the prod overlay), not the repository",
    "CKV_K8S_35": "secrets as files: the services read their settings from the environment "
    "(pydantic-settings, DAST_*); every secret arrives through a per-variable secretKeyRef "
    "(test_manifests.py rejects literals and envFrom secretRef), never in a manifest",
}
"""Checks whose failures are accepted, and why. Each must still fire (or it is removed
here); a reason that stops holding means its check counts again."""


@dataclass(frozen=True)
class Finding:
    check_id: str
    resource: str
    name: str

    def __str__(self) -> str:
        return f"{self.check_id} {self.resource}: {self.name}"


@dataclass(frozen=True)
class Scan:
    failed: list[Finding]
    skipped: list[Finding]
    passed_count: int
    resource_count: int
    parsing_errors: int

    @property
    def unjustified(self) -> list[Finding]:
        """The failures SKIPPED_CHECKS does not excuse."""
        return [finding for finding in self.failed if finding.check_id not in SKIPPED_CHECKS]


def checkov() -> Path:
    """checkov's path; a skip without its virtualenv, but a failure under CI."""
    if not (CHECKOV_STAMP.is_file() and os.access(CHECKOV, os.X_OK)):
        message = f"checkov's virtualenv ({CHECKOV_VENV.relative_to(REPO)}) is not installed: " \
            "`make checkov` creates it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI=true: the scan must run)")
        pytest.skip(message)
    return CHECKOV


def findings(entries: Any) -> list[Finding]:
    return [
        Finding(str(entry["check_id"]), str(entry["resource"]), str(entry["check_name"]))
        for entry in entries
    ]


def parse_report(output: str) -> Scan:
    """checkov's JSON: one report object, or a list of them (one per framework run)."""
    parsed = json.loads(output)
    reports = parsed if isinstance(parsed, list) else [parsed]
    kubernetes = [report for report in reports if report.get("check_type") == "kubernetes"]
    assert len(kubernetes) == 1, f"expected one kubernetes report, got: {output[:2000]}"
    report = kubernetes[0]
    summary = report["summary"]
    results = report["results"]
    return Scan(
        failed=findings(results.get("failed_checks", [])),
        skipped=findings(results.get("skipped_checks", [])),
        passed_count=int(summary["passed"]),
        resource_count=int(summary["resource_count"]),
        parsing_errors=int(summary["parsing_errors"]),
    )


def scan(documents: list[Document], workdir: Path) -> Scan:
    """checkov's kubernetes checks over the documents, written to one file in workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    manifest = workdir / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    result = subprocess.run(
        [
            str(checkov()), "--file", str(manifest), "--framework", "kubernetes",
            "--output", "json", "--quiet", "--compact",
            # Offline: no guideline download, no platform calls.
            "--skip-download",
        ],
        capture_output=True, text=True, timeout=SCAN_TIMEOUT_SECONDS, check=False,
        cwd=workdir,
    )
    # 0: no failed check; 1: some failed. Anything else is checkov itself failing.
    assert result.returncode in (0, 1), (
        f"checkov exited {result.returncode}:\n{result.stderr[-4000:]}"
    )
    scanned = parse_report(result.stdout)
    assert scanned.parsing_errors == 0, f"checkov could not parse {manifest}"
    return scanned


def workload_count(documents: list[Document]) -> int:
    kinds = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"}
    return sum(1 for doc in documents if doc.get("kind") in kinds)


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay_scan(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, list[Document], Scan]:
    """Each overlay rendered and scanned once per session (a scan takes seconds)."""
    overlay = str(request.param)
    checkov()  # skip (or fail under CI) before rendering when checkov is missing
    documents = render(K8S / "overlays" / overlay)
    return overlay, documents, scan(documents, tmp_path_factory.mktemp(f"checkov-{overlay}"))


def test_overlays_pass_every_checkov_check_not_skipped(
    overlay_scan: tuple[str, list[Document], Scan],
) -> None:
    overlay, documents, scanned = overlay_scan
    # An empty scan passes everything: make sure it saw the workloads and ran checks.
    assert scanned.resource_count >= workload_count(documents) > 0, overlay
    assert scanned.passed_count > 0, overlay
    assert not scanned.unjustified, f"{overlay}: checkov failed checks:\n" + "\n".join(
        map(str, scanned.unjustified))


def test_every_skipped_check_still_applies(
    overlay_scan: tuple[str, list[Document], Scan],
) -> None:
    """A skip whose check no longer fires (the manifests fixed it) must be removed, and no
    check may be silenced in the manifests (checkov.io/skip annotations) behind our back."""
    overlay, _, scanned = overlay_scan
    fired = {finding.check_id for finding in scanned.failed}
    stale = set(SKIPPED_CHECKS) - fired
    assert not stale, f"{overlay}: skipped checks that no longer fire: {sorted(stale)}"
    assert not scanned.skipped, f"{overlay}: checks skipped in the manifests:\n" + "\n".join(
        map(str, scanned.skipped))


def weakened_game(documents: list[Document], weaken: Callable[[Document], None]) -> None:
    games = [doc for doc in documents
             if doc.get("kind") == "Deployment" and doc["metadata"]["name"] == "dast-game"]
    assert len(games) == 1
    weaken(games[0]["spec"]["template"]["spec"])


def test_checkov_fails_a_privileged_container_without_limits(tmp_path: Path) -> None:
    documents = render(K8S / "overlays" / "dev")

    def weaken(pod: Document) -> None:
        container = pod["containers"][0]
        container["securityContext"] = {"privileged": True, "allowPrivilegeEscalation": True}
        del container["resources"]
        pod["automountServiceAccountToken"] = True
        pod["hostNetwork"] = True

    weakened_game(documents, weaken)
    scanned = scan(documents, tmp_path)
    game_failures = {finding.check_id for finding in scanned.failed
                     if finding.resource.endswith(".dast-game")
                     and finding.resource.startswith("Deployment.")}
    expected = {
        "CKV_K8S_16": "privileged container",
        "CKV_K8S_20": "privilege escalation allowed",
        "CKV_K8S_11": "no CPU limit",
        "CKV_K8S_13": "no memory limit",
        "CKV_K8S_10": "no CPU request",
        "CKV_K8S_12": "no memory request",
        "CKV_K8S_19": "host network shared",
        "CKV_K8S_38": "service account token mounted",
    }
    missed = {check: why for check, why in expected.items() if check not in game_failures}
    assert not missed, f"checkov let these through: {missed}; it failed {sorted(game_failures)}"
    # Only the broken Deployment fails: the rest of the overlay still passes.
    others = [finding for finding in scanned.unjustified
              if not finding.resource.endswith(".dast-game")]
    assert not others, "\n".join(map(str, others))
