"""No deployment runs on a secret published in the repository
(services/platform/published_secrets.py, docs/security.md "The operator's secrets").

The values come from the repository itself: every value given to ``DAST_JWT_SECRET`` (now
refused whatever its value: Ed25519 token keys replaced it) or ``DAST_SIGNING_KEY`` in a
tracked file (docs, README, compose, k8s, scripts, tests), and in
every commit's changes (a former default stays in every clone's history). A new one that the
server does not refuse fails :func:`test_every_secret_published_in_the_repository_is_refused`
until its digest is added to ``published_secrets.py``.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

from services.compose import run
from services.platform.config import ConfigError, Settings, check_retired_settings, load_settings
from services.platform.keys import LogSigner, SigningKeyError, load_signer
from services.platform.published_secrets import (
    PUBLISHED_JWT_SECRETS,
    PUBLISHED_SIGNING_SEEDS,
    digest,
    is_published_secret,
)
from tests.support.tokens import token_environment

ROOT: Final = Path(__file__).resolve().parents[3]
DATABASE: Final = "postgresql+psycopg://dast@db:5432/dast"
RING: Final = token_environment()["DAST_TOKEN_KEYS"]
FRESH_KEY: Final = base64.b64encode(secrets.token_bytes(32)).decode()
_NAME: Final = re.compile(r"DAST_(JWT_SECRET|SIGNING_KEY)")
_VALUE: Final = re.compile(r"""["']?[ \t]*(?::[-=]|[=:])[ \t]*["']?([^\s"'`}),;\]]*)""")
"""What follows a name when a value is given to it: ``NAME=v``, ``NAME: v``,
``"NAME": "v"``, ``${NAME:-v}``, ``${NAME:=v}`` (quoted or not)."""
FORMER_DEFAULTS: Final = (
    ("JWT_SECRET", "local-stack-secret-change-me-0123456789abcdef"),
    ("SIGNING_KEY", "5KhjKOyLvj5+eivdEAxIgnJ3tpWJXiMuWRMYLMrmZyQ="),
    ("JWT_SECRET", "compose-secret-change-me-0123456789abcdef"),
    ("JWT_SECRET", "dast-dev-secret-change-me-in-production-0123456789"),
)
"""Kept here too for a shallow clone, whose history holds no former default."""


def published_values(text: str) -> set[tuple[str, str]]:
    """Every (``JWT_SECRET`` or ``SIGNING_KEY``, value) ``text`` gives a value, leaving out
    substitutions (``$(…)``, ``$VAR``) and elisions, which publish nothing.

    >>> sorted(published_values('${DAST_JWT_SECRET:-x-y} DAST_SIGNING_KEY="k=" $DAST_JWT_SECRET'))
    [('JWT_SECRET', 'x-y'), ('SIGNING_KEY', 'k=')]
    """
    found = set()
    for name in _NAME.finditer(text):
        value = _VALUE.match(text, name.end())
        if value is None:
            continue
        given = value.group(1)
        if given and not given.startswith("$") and given.strip(".…"):
            found.add((name.group(1), given))
    return found


def _git(*args: str) -> str:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return ""
    done = subprocess.run([git, "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=False)
    return done.stdout if done.returncode == 0 else ""


def repository_values() -> list[tuple[str, str]]:
    """The values in the tracked files and in the history's changes."""
    found = set(FORMER_DEFAULTS)
    for path in _git("ls-files", "-z").split("\0"):
        file = ROOT / path
        if path and file.is_file():
            try:
                found |= published_values(file.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                continue  # images and other binaries
    history = _git("log", "--all", "-p", "--format=", "-G", _NAME.pattern)
    added = "\n".join(line[1:] for line in history.splitlines() if line.startswith("+"))
    found |= published_values(added)
    return sorted(found)


def _jwt_refused(value: str) -> bool:
    try:
        check_retired_settings({"DAST_JWT_SECRET": value})
    except ConfigError:
        return True
    return False


def _key_refused(value: str) -> bool:
    try:
        load_signer(Settings(database_url=DATABASE, token_keys=RING, signing_key=value))
    except SigningKeyError:
        return True
    return False


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("DAST_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("text", [
    "DAST_JWT_SECRET=v-1\n",  # .env files, shell
    "--from-literal=DAST_JWT_SECRET='v-1' \\",  # kubectl
    "      DAST_JWT_SECRET: v-1\n",  # YAML
    '      DAST_JWT_SECRET: "${DAST_JWT_SECRET:-v-1}"',  # compose with a default
    ': "${DAST_JWT_SECRET:=v-1}"',  # a shell default
    'env = {"DAST_JWT_SECRET": "v-1", "DAST_LOG_LEVEL": "info"}',  # Python
])
def test_the_scan_reads_every_way_a_value_is_written(text: str) -> None:
    assert published_values(text) == {("JWT_SECRET", "v-1")}


def test_the_scan_finds_values_in_the_tracked_files() -> None:
    if not _git("ls-files"):
        pytest.skip("not a git checkout: no tracked files to read")
    assert len(repository_values()) > len(FORMER_DEFAULTS)


@pytest.mark.parametrize(("name", "value"), repository_values())
def test_every_secret_published_in_the_repository_is_refused(name: str, value: str) -> None:
    refused = _jwt_refused(value) if name == "JWT_SECRET" else _key_refused(value)
    assert refused, (
        f"DAST_{name} {value[:12]}… appears in the repository and a deployment accepts it: "
        "add its digest to services/platform/published_secrets.py"
    )


def test_the_digests_are_kept_not_the_secrets() -> None:
    text = (ROOT / "services/platform/published_secrets.py").read_text()
    for _, value in FORMER_DEFAULTS:
        assert value not in text
    assert digest(b"local-stack-secret-change-me-0123456789abcdef") in PUBLISHED_JWT_SECRETS
    seed = base64.b64decode("5KhjKOyLvj5+eivdEAxIgnJ3tpWJXiMuWRMYLMrmZyQ=")
    assert digest(seed) in PUBLISHED_SIGNING_SEEDS


def test_a_jwt_secret_is_refused_whatever_its_value_and_never_echoed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAST_JWT_SECRET", "local-stack-secret-change-me-0123456789abcdef")
    with pytest.raises(ConfigError, match="DAST_JWT_SECRET is no longer read") as refused:
        load_settings(database_url=DATABASE, signing_key=FRESH_KEY)
    assert "local-stack-secret" not in str(refused.value)  # never echoed back
    # Surrounding spaces make no other secret.
    assert is_published_secret("  local-stack-secret-change-me-0123456789abcdef\n")


async def test_a_deployment_refuses_a_published_signing_key_however_it_is_written(
    tmp_path: Path,
) -> None:
    seed = base64.b64decode("5KhjKOyLvj5+eivdEAxIgnJ3tpWJXiMuWRMYLMrmZyQ=")
    pem = tmp_path / "published.pem"
    pem.write_bytes(LogSigner.from_seed(seed).pem())
    for value in ("5KhjKOyLvj5+eivdEAxIgnJ3tpWJXiMuWRMYLMrmZyQ=", str(pem)):
        settings = Settings(nats_url="nats://127.0.0.1:4222", token_keys=RING,
                            signing_key=value)
        with pytest.raises(SigningKeyError, match="published in dast's repository") as refused:
            await run(settings)
        assert "os.urandom(32)" in str(refused.value)


def test_fresh_secrets_are_accepted_and_the_embedded_mode_keeps_its_defaults(
    tmp_path: Path,
) -> None:
    deployed = Settings(database_url=DATABASE, token_keys=RING, signing_key=FRESH_KEY)
    deployed.check_secrets()
    assert load_signer(deployed).seed == base64.b64decode(FRESH_KEY)
    # One process on loopback makes its own keys, as before.
    Settings(data_dir=tmp_path).check_secrets()
