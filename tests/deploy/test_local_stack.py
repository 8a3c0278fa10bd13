"""deploy/local-stack.sh's secrets (the log-signing key, the token key ring and one token key
per issuing service): random ones made on the first run, kept in a private,
git-ignored file and reused, never a value written in the repository (docs/deploy.md
"Local stack"). ``--secrets`` runs that part alone: no server, no PostgreSQL or NATS."""

from __future__ import annotations

import base64
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from services.platform.auth import Role, TokenCache, mint_token
from services.platform.config import Settings
from services.platform.keys import load_signer
from services.platform.token_keys import OPERATOR, load_token_keys

ROOT: Final = Path(__file__).resolve().parents[2]
SCRIPT: Final = ROOT / "deploy" / "local-stack.sh"
DATABASE: Final = "postgresql+psycopg://dast@db:5432/dast"
ISSUERS: Final = ("LOBBY", "BOT", "TOURNAMENT", "STATS", "ACCOUNTS", "OPERATOR")


def _environment(secrets_file: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("DAST_")}
    return {**env, "DAST_LOCAL_SECRETS": str(secrets_file), "PYTHON": sys.executable, **extra}


def _secrets_of(secrets_file: Path, **extra: str) -> dict[str, str]:
    """Run ``local-stack.sh --secrets``; the values its file then holds."""
    done = subprocess.run(["bash", str(SCRIPT), "--secrets"], capture_output=True, text=True,
                          env=_environment(secrets_file, **extra), timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(secrets_file)
    return _read(secrets_file)


def _read(secrets_file: Path) -> dict[str, str]:
    values = {}
    for line in secrets_file.read_text().splitlines():
        name, _, value = line.partition("=")
        if not line.startswith("#"):
            values[name] = value.strip("'")
    return values


def test_the_first_run_makes_private_random_secrets_that_a_deployment_accepts(
    tmp_path: Path,
) -> None:
    secrets_file = tmp_path / "state" / "local-stack.env"
    values = _secrets_of(secrets_file)
    assert set(values) == {"DAST_SIGNING_KEY", "DAST_TOKEN_KEYS", *(
        f"DAST_TOKEN_SIGNING_KEYS_{issuer}" for issuer in ISSUERS)}
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    assert len(base64.b64decode(values["DAST_SIGNING_KEY"], validate=True)) == 32
    # What the servers' start-up checks say of them: each service holds only its own key.
    ring = values["DAST_TOKEN_KEYS"]
    deployed = Settings(database_url=DATABASE, token_keys=ring,
                        signing_key=values["DAST_SIGNING_KEY"])
    deployed.check_secrets()
    load_signer(deployed)
    game = load_token_keys(ring, None, services=["game"], embedded=False, data_dir=tmp_path)
    for service in ("lobby", "bot", "tournament", "stats", "accounts"):
        own = values[f"DAST_TOKEN_SIGNING_KEYS_{service.upper()}"]
        keys = load_token_keys(ring, own, services=[service], embedded=False,
                               data_dir=tmp_path)
        assert list(keys.signers) == [service]
        token = mint_token(keys.signer(service), "x", Role.SERVICE if service != "accounts"
                           else Role.PLAYER)
        assert TokenCache(game.ring).identity(token).player_id == "x"
    operator = load_token_keys(ring, values["DAST_TOKEN_SIGNING_KEYS_OPERATOR"], services=(),
                               embedded=False, data_dir=tmp_path, operator=True)
    admin = mint_token(operator.signer(OPERATOR), "root", Role.ADMIN)
    assert TokenCache(game.ring).identity(admin).role is Role.ADMIN


def test_later_runs_reuse_the_secrets_and_another_checkout_gets_its_own(
    tmp_path: Path,
) -> None:
    first = _secrets_of(tmp_path / "a.env")
    assert _secrets_of(tmp_path / "a.env") == first  # tokens and seals survive restarts
    other = _secrets_of(tmp_path / "b.env")
    assert other["DAST_TOKEN_KEYS"] != first["DAST_TOKEN_KEYS"]
    assert other["DAST_TOKEN_SIGNING_KEYS_LOBBY"] != first["DAST_TOKEN_SIGNING_KEYS_LOBBY"]
    assert other["DAST_SIGNING_KEY"] != first["DAST_SIGNING_KEY"]


def test_two_stacks_starting_at_once_agree_on_one_file(tmp_path: Path) -> None:
    secrets_file = tmp_path / "local-stack.env"
    runs = [subprocess.Popen(["bash", str(SCRIPT), "--secrets"], env=_environment(secrets_file),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)]
    for process in runs:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
    assert len(_read(secrets_file)) == 2 + len(ISSUERS)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["local-stack.env"]  # no drafts


def test_a_damaged_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    secrets_file = tmp_path / "local-stack.env"
    secrets_file.write_text("DAST_SIGNING_KEY=only-one\n")
    done = subprocess.run(["bash", str(SCRIPT), "--secrets"], capture_output=True, text=True,
                          env=_environment(secrets_file), timeout=60, check=False)
    assert done.returncode != 0
    assert "no DAST_TOKEN_KEYS" in done.stderr and "delete it" in done.stderr


def test_the_former_jwt_secret_stops_the_stack_saying_so(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          env=_environment(tmp_path / "a.env", DAST_JWT_SECRET="x" * 40),
                          check=False)
    assert done.returncode == 2 and "DAST_JWT_SECRET is no longer read" in done.stderr


def test_the_script_writes_no_secret_of_its_own_and_its_file_is_ignored_by_git() -> None:
    text = SCRIPT.read_text()
    for name in ("DAST_SIGNING_KEY", "DAST_TOKEN_KEYS"):
        assert f"{name}:=" not in text.replace(f"{name}:=$(", "")
    assert not re.search(r"""['"]d['"]\s*:\s*['"]\w""", text)  # no private key written out
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run([git, "-C", str(ROOT), "check-ignore", "-q",
                              ".dast/local-stack.env"], check=False)
    assert ignored.returncode == 0
