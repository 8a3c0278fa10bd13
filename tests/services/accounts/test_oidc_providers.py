"""The ``DAST_OIDC_PROVIDERS`` setting (services/accounts/oidc_providers.py): what it accepts,
what it refuses and why, and the examples of docs/accounts.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from services.accounts.oidc_providers import jwks_url_problem, parse_providers
from services.platform.config import ConfigError, load_settings
from tests.support.idp import ec_key, ed25519_key, rsa_key

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "accounts.md"
GOOGLE = {
    "name": "google", "issuer": "https://accounts.google.com",
    "issuer_aliases": ["accounts.google.com"], "audiences": ["web.apps.googleusercontent.com"],
    "jwks_url": "https://www.googleapis.com/oauth2/v3/certs",
}


def refusal(providers: list[dict[str, Any]]) -> str:
    """The message ``providers`` are refused with."""
    with pytest.raises(ConfigError) as caught:
        parse_providers(json.dumps(providers))
    return str(caught.value)


def test_empty_setting_means_no_provider() -> None:
    assert parse_providers("") == ()
    assert parse_providers("  \n") == ()
    assert parse_providers("[]") == ()


def test_provider_is_read_with_its_defaults() -> None:
    (google,) = parse_providers(json.dumps([GOOGLE]))
    assert google.name == "google"
    assert google.issuers == ("https://accounts.google.com", "accounts.google.com")
    assert google.audiences == ("web.apps.googleusercontent.com",)
    assert google.algorithms == ("RS256", "ES256", "EdDSA")
    assert google.static_keys == ()


def test_guide_examples_are_accepted() -> None:
    blocks = re.findall(r"```json\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)
    names = [provider.name for block in blocks for provider in parse_providers(block)]
    assert names == ["google", "apple", "firebase", "studio"]
    yaml_value = re.search(r"value: >-\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)
    assert yaml_value is not None
    folded = " ".join(line.strip() for line in yaml_value.group(1).splitlines())
    assert [provider.name for provider in parse_providers(folded)] == ["google", "apple"]


def test_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAST_OIDC_PROVIDERS", json.dumps([GOOGLE]))
    (provider,) = parse_providers(load_settings().oidc_providers)
    assert provider.jwks_url == GOOGLE["jwks_url"]


@pytest.mark.parametrize("url", [
    "https://keys.example.com/jwks.json", "http://127.0.0.1:8080/jwks", "http://localhost/k",
    "http://[::1]:9000/k", "http://127.8.9.10/k",
])
def test_jwks_url_accepted(url: str) -> None:
    assert jwks_url_problem(url) is None
    assert parse_providers(json.dumps([{**GOOGLE, "jwks_url": url}]))


@pytest.mark.parametrize(("url", "problem"), [
    ("http://www.googleapis.com/oauth2/v3/certs", "https"),
    ("http://10.0.0.8/jwks", "https"),
    ("http://localhost.example.com/jwks", "https"),
    ("file:///etc/passwd", "host"),
    ("ftp://keys.example.com/jwks", "https"),
    ("https://user:pw@keys.example.com/jwks", "credentials"),
    ("https:///jwks", "host"),
    ("not a url", "host"),
])
def test_jwks_url_refused(url: str, problem: str) -> None:
    assert problem in (jwks_url_problem(url) or "")
    assert problem in refusal([{**GOOGLE, "jwks_url": url}])


def test_keys_from_exactly_one_place() -> None:
    both = {**GOOGLE, "static_keys": [ec_key("e").public_jwk()]}
    neither = {key: value for key, value in GOOGLE.items() if key != "jwks_url"}
    assert "either jwks_url or static_keys" in refusal([both])
    assert "either jwks_url or static_keys" in refusal([neither])


def static(*keys: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": "studio", "issuer": "https://login.example.com", "audiences": ["dast"],
            "static_keys": list(keys), **fields}


def test_static_public_keys_are_accepted() -> None:
    (provider,) = parse_providers(json.dumps([static(
        rsa_key("r").public_jwk(), ec_key("e").public_jwk(), ed25519_key("d").public_jwk())]))
    assert [key["kid"] for key in provider.static_keys] == ["r", "e", "d"]


@pytest.mark.parametrize(("jwk", "problem"), [
    (rsa_key("r").private_jwk(), "private"),
    (ec_key("e").private_jwk(), "private"),
    (ed25519_key("d").private_jwk(), "private"),
    ({"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", "kid": "h"}, "secret"),
    ({k: v for k, v in ec_key("e").public_jwk().items() if k != "kid"}, "no kid"),
    ({**ec_key("e").public_jwk(), "use": "enc"}, "not a signing key"),
    ({"kty": "EC", "crv": "P-256", "kid": "e", "x": "AAAA", "y": "AAAA"}, "not a usable key"),
    ({"kty": "RSA", "kid": "x", "n": "AQAB", "e": "AQAB", "alg": "RS512"}, "not a usable key"),
])
def test_unusable_static_keys_are_refused(jwk: dict[str, Any], problem: str) -> None:
    assert problem in refusal([static(jwk)])


def test_static_key_outside_the_algorithms_is_refused() -> None:
    message = refusal([static(ec_key("e").public_jwk(), algorithms=["RS256"])])
    assert "ES256, not one of the algorithms" in message


def test_repeated_kid_is_refused() -> None:
    assert "repeat a kid" in refusal([static(ec_key("k").public_jwk(), ec_key("k").public_jwk())])


@pytest.mark.parametrize(("change", "field"), [
    ({"name": "Google"}, "name"), ({"name": ""}, "name"), ({"issuer": ""}, "issuer"),
    ({"audiences": []}, "audiences"), ({"audiences": [""]}, "audience"),
    ({"algorithms": ["HS256"]}, "algorithms"), ({"algorithms": ["none"]}, "algorithms"),
    ({"algorithms": []}, "algorithms"), ({"issuer_aliases": [""]}, "alias"),
    ({"client_secret": "x"}, "client_secret"), ({"jwks_url": None}, "jwks_url"),
])
def test_bad_fields_are_refused(change: dict[str, Any], field: str) -> None:
    message = refusal([{**GOOGLE, **change}])
    assert message.startswith("DAST_OIDC_PROVIDERS is invalid")
    assert field in message


@pytest.mark.parametrize("text", ["{", '{"name": "google"}', "[1]", '"x"', "null"])
def test_malformed_setting_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="DAST_OIDC_PROVIDERS"):
        parse_providers(text)


def test_providers_may_not_share_a_name_or_an_issuer() -> None:
    twin = {**GOOGLE, "issuer": "https://other.example.com", "issuer_aliases": []}
    assert "name 'google'" in refusal([GOOGLE, twin])
    alias_clash = {**GOOGLE, "name": "google2", "issuer": "accounts.google.com",
                   "issuer_aliases": []}
    assert "issuer 'accounts.google.com'" in refusal([GOOGLE, alias_clash])
