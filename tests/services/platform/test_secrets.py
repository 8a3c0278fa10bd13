"""Secrets that cannot be defaulted (docs/security.md "The operator's secrets"): start-up
refusals, the signing key's sources, and URLs shown without their passwords."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import TypedDict

import pytest
from typer.testing import CliRunner

from services.cli import app
from services.compose import banner as _banner
from services.compose import run
from services.platform.config import ConfigError, Settings, load_settings, masked_url
from services.platform.keys import (
    EMBEDDED_KEY_FILE,
    LogSigner,
    SigningKeyError,
    load_signer,
    parse_signing_key,
)
from services.platform.token_keys import TokenKeyError, embedded_token_keys
from tests.support.tokens import token_environment

RING = token_environment()["DAST_TOKEN_KEYS"]
BOT_KEYS = token_environment(["bot"])["DAST_TOKEN_SIGNING_KEYS"]
SIGNING_KEY = base64.b64encode(b"k" * 32).decode()
DATABASE = "postgresql+psycopg://dast:pg-pass-word@db:5432/dast"
NATS = "nats://nats-user:nats-pass-word@nats:4222"


class _Url(TypedDict, total=False):
    """One of the :class:`Settings` URLs that make a deployment."""

    database_url: str
    nats_url: str


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DAST_JWT_SECRET", "DAST_TOKEN_KEYS", "DAST_TOKEN_SIGNING_KEYS",
                 "DAST_SIGNING_KEY", "DAST_DATABASE_URL", "DAST_NATS_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("url", [{"database_url": DATABASE}, {"nats_url": NATS}])
async def test_a_deployment_refuses_to_start_without_token_keys(url: _Url) -> None:
    settings = Settings(signing_key=SIGNING_KEY, **url)
    with pytest.raises(ConfigError, match="DAST_TOKEN_KEYS is unset") as refused:
        await run(settings)
    assert "python -m services.platform.token_keys" in str(refused.value)  # how to make them


async def test_a_deployment_refuses_to_start_without_a_signing_key() -> None:
    settings = Settings(database_url=DATABASE, nats_url=NATS, token_keys=RING)
    with pytest.raises(ConfigError, match="DAST_SIGNING_KEY is unset"):
        await run(settings)


async def test_a_game_replica_given_a_token_signing_key_refuses_to_start() -> None:
    settings = Settings(database_url=DATABASE, nats_url=NATS, token_keys=RING,
                        token_signing_keys=BOT_KEYS, signing_key=SIGNING_KEY, services="game")
    with pytest.raises(TokenKeyError, match="holds keys of bot, which this process does not"):
        await run(settings)
    lobby = Settings(database_url=DATABASE, nats_url=NATS, token_keys=RING,
                     signing_key=SIGNING_KEY, services="lobby", game_target="127.0.0.1:1")
    with pytest.raises(TokenKeyError, match="has no key for lobby"):
        await run(lobby)


def test_the_former_jwt_secret_is_refused_saying_what_replaced_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAST_JWT_SECRET", "a-real-secret-of-more-than-32-bytes-0123456789")
    with pytest.raises(ConfigError, match="DAST_JWT_SECRET is no longer read") as refused:
        load_settings()
    assert "DAST_TOKEN_KEYS" in str(refused.value)
    assert "DAST_TOKEN_SIGNING_KEYS" in str(refused.value)


def test_dast_serve_explains_the_refusal_and_exits_with_two(tmp_path: Path) -> None:
    env = {"DAST_DATABASE_URL": DATABASE, "DAST_NATS_URL": NATS, "DAST_DATA_DIR": str(tmp_path)}
    result = CliRunner().invoke(app, ["serve"], env=env)
    assert result.exit_code == 2
    assert "refusing to start" in result.output and "DAST_SIGNING_KEY" in result.output
    assert "pg-pass-word" not in result.output
    former = CliRunner().invoke(app, ["serve"], env={**env, "DAST_JWT_SECRET": "x" * 40})
    assert former.exit_code == 2 and "DAST_TOKEN_KEYS" in former.output
    token = CliRunner().invoke(app, ["token", "root", "--role", "admin"],
                               env={**env, **token_environment(["bot"])})
    assert token.exit_code == 2 and "has no key for operator" in token.output


def test_the_embedded_mode_runs_on_its_own_keys() -> None:
    settings = Settings()
    settings.check_secrets()  # nothing to refuse: one process on loopback
    assert settings.is_embedded() and settings.token_keys is None


def test_the_banner_hides_passwords_and_shows_a_dev_token_only_when_embedded(
    tmp_path: Path,
) -> None:
    deployed = Settings(database_url=DATABASE, nats_url=NATS, token_keys=RING,
                        signing_key=SIGNING_KEY)
    banner = _banner(deployed, ["game"], 50051, embedded_token_keys(tmp_path).only(["game"]))
    assert "pg-pass-word" not in banner and "nats-pass-word" not in banner
    assert "dast:***@db:5432" in banner and "nats-user:***@nats:4222" in banner
    assert "Bearer" not in banner
    embedded = _banner(Settings(data_dir=tmp_path), ["game"], 50051,
                       embedded_token_keys(tmp_path))
    assert "token keys made under" in embedded and "Bearer" in embedded


@pytest.mark.parametrize(("url", "shown"), [
    (DATABASE, "postgresql+psycopg://dast:***@db:5432/dast"),
    ("nats://s3cr3t-token@nats:4222", "nats://***@nats:4222"),
    ("nats://a:1@n1:4222,nats://b:2@n2:4222", "nats://a:***@n1:4222,nats://b:***@n2:4222"),
    ("sqlite:////tmp/dast.db", "sqlite:////tmp/dast.db"),
    ("postgresql://postgres@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"),
])
def test_urls_are_shown_without_their_secrets(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_the_embedded_signing_key_is_made_once_and_kept_private(tmp_path: Path) -> None:
    first = load_signer(Settings(data_dir=tmp_path))
    path = tmp_path / EMBEDDED_KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_signer(Settings(data_dir=tmp_path)).public_key == first.public_key


def test_a_configured_signing_key_is_base64_of_a_seed_or_a_pem_path(tmp_path: Path) -> None:
    from_seed = parse_signing_key(SIGNING_KEY)
    assert from_seed.public_key == LogSigner.from_seed(b"k" * 32).public_key
    pem = tmp_path / "key.pem"
    pem.write_bytes(from_seed.pem())
    assert parse_signing_key(str(pem)).public_key == from_seed.public_key
    deployed = Settings(database_url=DATABASE, token_keys=RING, signing_key=str(pem))
    assert load_signer(deployed).public_key == from_seed.public_key


@pytest.mark.parametrize("value", [
    "not base64 at all", base64.b64encode(b"short").decode(), "/nonexistent/key.pem",
])
def test_an_unreadable_signing_key_is_refused(value: str) -> None:
    with pytest.raises(SigningKeyError):
        parse_signing_key(value)


def test_a_seed_whose_base64_starts_with_a_slash_is_a_seed_not_a_path() -> None:
    # One random seed in 64 encodes so; the local stack's were refused as missing files.
    value = base64.b64encode(b"\xff" * 32).decode()
    assert value.startswith("/")
    assert parse_signing_key(value).seed == b"\xff" * 32
