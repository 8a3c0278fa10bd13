"""Token keys from the settings (services/platform/token_keys.py): the ring and the signing
keys parsed and checked at start, each process holding only its own services' keys, the
embedded mode's keys made once under the data dir."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import jwt
import pytest

from services.platform.auth import (
    AuthError,
    Role,
    TokenCache,
    TokenKeyRing,
    TokenSigner,
    mint_token,
)
from services.platform.keys import LogSigner
from services.platform.token_keys import (
    EMBEDDED_KEYS_FILE,
    TokenKeyError,
    TokenKeys,
    generate_token_keys,
    load_token_keys,
    main,
    parse_key_ring,
    parse_signing_keys,
    ring_document,
    signing_document,
)
from tests.support.tokens import TEST_KEYS, token_environment

RING = TEST_KEYS.ring_document()
ALL_SERVICES = ("game", "lobby", "bot", "tournament", "stats", "accounts")


def _load(ring: str | None, signing: str | None, *services: str, tmp: Path | None = None,
          operator: bool = False) -> TokenKeys:
    return load_token_keys(ring, signing, services=services, embedded=tmp is not None,
                           data_dir=tmp or Path("/nonexistent"), operator=operator)


def test_each_process_holds_only_the_keys_of_its_services() -> None:
    environment = token_environment(["lobby"])
    keys = load_token_keys(environment["DAST_TOKEN_KEYS"],
                           environment["DAST_TOKEN_SIGNING_KEYS"], services=["lobby"],
                           embedded=False, data_dir=Path("."))
    assert set(keys.signers) == {"lobby"}
    assert len(keys.ring.keys) == 6
    with pytest.raises(TokenKeyError, match="no signing key for 'bot'"):
        keys.signer("bot")


def test_a_game_replica_holds_no_key_and_nothing_of_its_configuration_mints_a_token(
        tmp_path: Path) -> None:
    environment = token_environment(["game"])
    assert "DAST_TOKEN_SIGNING_KEYS" not in environment
    game = load_token_keys(environment["DAST_TOKEN_KEYS"], None, services=["game"],
                           embedded=False, data_dir=tmp_path)
    assert game.signers == {}
    # What else a game replica holds: its log-signing key, and the HMAC secret of old.
    seal_key = LogSigner.generate().private_key
    forged = [jwt.encode({"sub": "root", "iss": "dast", "exp": 2**40, "role": role},
                         seal_key, algorithm="EdDSA", headers={"kid": kid})
              for kid in ("operator-test", "tournament-test", "bot-test") for role in Role]
    forged.append(jwt.encode({"sub": "root", "iss": "dast", "exp": 2**40, "role": "admin"},
                             "former-jwt-secret-0123456789abcdef0123456789"))
    for candidate in forged:
        with pytest.raises(AuthError):
            TokenCache(game.ring).identity(candidate)
    # And it refuses to start when given another service's key.
    with pytest.raises(TokenKeyError, match="holds keys of bot, which this process does not"):
        _load(environment["DAST_TOKEN_KEYS"], token_environment(["bot"])[
            "DAST_TOKEN_SIGNING_KEYS"], "game")


def test_every_service_gets_its_key_when_one_process_runs_them_all() -> None:
    environment = token_environment(ALL_SERVICES)
    keys = load_token_keys(environment["DAST_TOKEN_KEYS"],
                           environment["DAST_TOKEN_SIGNING_KEYS"], services=ALL_SERVICES,
                           embedded=False, data_dir=Path("."))
    assert set(keys.signers) == {"lobby", "bot", "tournament", "stats", "accounts"}


@pytest.mark.parametrize(("ring", "signing", "services", "message"), [
    (None, None, ("game",), "DAST_TOKEN_KEYS is required outside the embedded mode"),
    ("", None, ("game",), "DAST_TOKEN_KEYS is required"),
    (RING, None, ("lobby",), "has no key for lobby, which this process signs with"),
    ("{not json", None, ("game",), "DAST_TOKEN_KEYS is not valid JSON"),
    ("/no/such/file.json", None, ("game",), "neither a JSON document nor a readable file"),
    ('{"keys": []}', None, ("game",), "with at least one key"),
    ('{"keys": {"kid": "a"}}', None, ("game",), "with at least one key"),
    ('[1, 2]', None, ("game",), "must be an object"),
    ('{"keys": [7]}', None, ("game",), "key 0 is not an object"),
    ('{"keys": [{"kid": "../x", "kty": "OKP", "crv": "Ed25519"}]}', None, ("game",),
     "kid must be 1 to 64 letters"),
    ('{"keys": [{"kid": "a", "kty": "RSA", "n": "x", "e": "AQAB"}]}', None, ("game",),
     "only Ed25519 keys"),
    ('{"keys": [{"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "short", "roles": '
     '["admin"]}]}', None, ("game",), "x must be the base64url of 32 bytes"),
    ('{"keys": [{"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "' + "A" * 43 + '", '
     '"roles": []}]}', None, ("game",), "roles must be a non-empty list"),
    ('{"keys": [{"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "' + "A" * 43 + '", '
     '"roles": ["root"]}]}', None, ("game",), "roles must be a non-empty list"),
    (TEST_KEYS.signing_document(), None, ("game",), "holds private key material"),
    (RING, '{"keys": [{"issuer": "game", "kid": "g-1", "kty": "OKP", "crv": "Ed25519", '
     '"d": "' + "A" * 43 + '"}]}', ("game",), "issuer must be one of accounts, lobby"),
])
def test_settings_that_would_fail_are_refused_at_start_saying_what_is_wrong(
        ring: str | None, signing: str | None, services: tuple[str, ...], message: str) -> None:
    with pytest.raises(TokenKeyError, match=message):
        _load(ring, signing, *services)


def test_a_duplicate_kid_or_issuer_is_refused() -> None:
    document = json.loads(RING)
    document["keys"].append(document["keys"][0])
    with pytest.raises(TokenKeyError, match="names the kid 'accounts-test' twice"):
        parse_key_ring(json.dumps(document))
    signing = json.loads(TEST_KEYS.only(["bot"]).signing_document())
    signing["keys"].append(json.loads(generate_token_keys(["bot"]).signing_document())[
        "keys"][0])
    with pytest.raises(TokenKeyError, match="two keys of 'bot'"):
        parse_signing_keys(json.dumps(signing))


def test_a_signing_key_the_ring_does_not_trust_for_its_roles_is_refused() -> None:
    other = generate_token_keys(["lobby"], suffix="test")  # the same kid, another key
    with pytest.raises(TokenKeyError, match="'lobby-test' of 'lobby' is not in DAST_TOKEN_KEYS"):
        _load(RING, other.signing_document(), "lobby")
    unknown = generate_token_keys(["lobby"], suffix="9")
    with pytest.raises(TokenKeyError, match="'lobby-9' of 'lobby' is not in DAST_TOKEN_KEYS"):
        _load(RING, unknown.signing_document(), "lobby")
    narrowed = json.loads(RING)
    for key in narrowed["keys"]:
        if key["kid"] == "lobby-test":
            key["roles"] = ["player"]
    with pytest.raises(TokenKeyError, match="trusts 'lobby-test' without the roles 'lobby' "
                                            r"signs \(service\)"):
        _load(json.dumps(narrowed), TEST_KEYS.only(["lobby"]).signing_document(), "lobby")


def test_a_published_signing_seed_is_refused() -> None:
    published = base64.b64decode("5KhjKOyLvj5+eivdEAxIgnJ3tpWJXiMuWRMYLMrmZyQ=")
    signer = TokenSigner("bot", "bot-0", LogSigner.from_seed(published).private_key)
    with pytest.raises(TokenKeyError, match="'bot-0' is a key published in dast's repo"):
        _load(ring_document(TokenKeyRing.trusting({signer: [Role.SERVICE]})),
              signing_document([signer]), "bot")


def test_the_ring_and_keys_may_be_files(tmp_path: Path) -> None:
    environment = token_environment(["stats"])
    (tmp_path / "ring.json").write_text(environment["DAST_TOKEN_KEYS"])
    (tmp_path / "keys.json").write_text(environment["DAST_TOKEN_SIGNING_KEYS"])
    keys = _load(str(tmp_path / "ring.json"), str(tmp_path / "keys.json"), "stats")
    assert set(keys.signers) == {"stats"}


def test_the_embedded_mode_makes_its_keys_once_readable_by_its_owner_only(
        tmp_path: Path) -> None:
    first = load_token_keys(None, None, services=ALL_SERVICES, embedded=True,
                            data_dir=tmp_path, operator=True)
    path = tmp_path / EMBEDDED_KEYS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert set(first.signers) == {"lobby", "bot", "tournament", "stats", "accounts",
                                  "operator"}
    again = load_token_keys(None, None, services=["game"], embedded=True, data_dir=tmp_path)
    assert again.signers == {}
    admin = mint_token(first.signer("operator"), "dev-admin", Role.ADMIN)
    assert TokenCache(again.ring).identity(admin).role is Role.ADMIN
    player_by_bot = mint_token(first.signer("bot"), "p", Role.PLAYER)
    with pytest.raises(AuthError, match="may not sign player tokens"):
        TokenCache(again.ring).identity(player_by_bot)


def test_the_key_maker_prints_a_ring_and_its_signing_keys(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lobby", "operator", "--suffix", "2026-12"]) == 0
    ring, signing = capsys.readouterr().out.splitlines()
    keys = load_token_keys(ring, signing, services=["lobby"], embedded=False,
                           data_dir=Path("."), operator=True)
    assert keys.signer("lobby").kid == "lobby-2026-12"
    assert main(["game"]) == 2
    assert "issuers: accounts, lobby" in capsys.readouterr().err


def test_the_key_maker_writes_one_private_file_per_issuer_and_never_overwrites(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bot", "operator", "--out", str(tmp_path / "keys")]) == 0
    assert sorted(path.name for path in (tmp_path / "keys").iterdir()) == [
        "token_key_bot.json", "token_key_operator.json", "token_keys.json"]
    for path in (tmp_path / "keys").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    keys = load_token_keys(str(tmp_path / "keys" / "token_keys.json"),
                           str(tmp_path / "keys" / "token_key_bot.json"), services=["bot"],
                           embedded=False, data_dir=tmp_path)
    assert keys.signer("bot").kid == "bot-1"
    capsys.readouterr()
    assert main(["bot", "--out", str(tmp_path / "keys")]) == 1
    assert "keys are never overwritten" in capsys.readouterr().err
