"""A local OpenID Connect identity provider for tests: keys made in the test, a JWKS endpoint
on 127.0.0.1, and ID tokens minted with chosen claims and headers, forged ones included.

    with LocalIdp([rsa_key("r1")]) as idp:
        token = idp.mint(idp.keys["r1"], sub="player-1")
        ...                    # a verifier configured with idp.provider() checks it
        idp.rotate(ec_key("e2"))          # publish e2, withdraw r1
        idp.fetches                       # how many times the JWKS was fetched

The server is stdlib ``http.server`` in a thread on an ephemeral port; ``mode`` makes it fail
the ways a provider fails (an error status, a hang, garbage, a huge document).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from services.accounts.oidc import OidcProvider

JWKS_PATH: Final = "/.well-known/jwks.json"
MOVED_PATH: Final = "/keys"
"""Where ``redirect`` mode sends a fetch of the keys; it serves them in every mode."""
ISSUER: Final = "https://idp.example.test"
AUDIENCE: Final = "com.example.dast"
TOKEN_SECONDS: Final = 600

Mode = Literal["serve", "error", "hang", "garbage", "huge", "redirect"]
"""How the JWKS endpoint answers: the keys; HTTP 503; not at all (until the IdP stops);
a body that is not JSON; a body over any sane size; a redirect to the keys."""

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey


@dataclass(frozen=True)
class SigningKey:
    """A key pair of the IdP: ``kid``, the algorithm it signs with, and both halves."""

    kid: str
    alg: str
    private: PrivateKey

    def public_jwk(self) -> dict[str, Any]:
        """The public half as the JWKS publishes it."""
        return {**_jwk(self.private.public_key()), "kid": self.kid, "alg": self.alg,
                "use": "sig"}

    def private_jwk(self) -> dict[str, Any]:
        """The private half as a JWK (what a provider's configuration must never hold)."""
        return {**_jwk(self.private), "kid": self.kid, "alg": self.alg}

    def public_pem(self) -> bytes:
        """The public half in PEM (what the HMAC key-confusion attack signs with)."""
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _jwk(key: PrivateKey | PublicKey) -> dict[str, Any]:
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        return RSAAlgorithm.to_jwk(key, as_dict=True)
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        return ECAlgorithm.to_jwk(key, as_dict=True)
    return OKPAlgorithm.to_jwk(key, as_dict=True)


def rsa_key(kid: str, bits: int = 2048) -> SigningKey:
    return SigningKey(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=bits))


def ec_key(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


def ed25519_key(kid: str) -> SigningKey:
    return SigningKey(kid, "EdDSA", ed25519.Ed25519PrivateKey.generate())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _segment(value: Mapping[str, Any]) -> str:
    return _b64(json.dumps(value, separators=(",", ":")).encode())


class LocalIdp:
    """An identity provider on 127.0.0.1 (start with ``with`` or :meth:`start`)."""

    def __init__(self, keys: Iterable[SigningKey] = (), *, issuer: str = ISSUER,
                 audience: str = AUDIENCE) -> None:
        self.issuer = issuer
        self.audience = audience
        self.keys: dict[str, SigningKey] = {key.kid: key for key in keys}
        """Every key the IdP holds, published or not, by kid."""
        self.published: list[str] = list(self.keys)
        """The kids the JWKS endpoint serves, in order."""
        self.mode: Mode = "serve"
        self._fetches = 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- the server ----

    def start(self) -> LocalIdp:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path not in (JWKS_PATH, MOVED_PATH):
                    self.send_error(404)
                    return
                idp._count_fetch()
                status, body = idp._answer() if self.path == JWKS_PATH else (
                    200, json.dumps(idp.jwks()).encode())
                if status == 0:
                    idp._release.wait(60)  # hang until the IdP stops
                    return
                self.send_response(status)
                if status == 302:
                    self.send_header("Location", MOVED_PATH)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name="local-idp", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (a fetch afterwards finds the port closed)."""
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> LocalIdp:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the IdP is not started"
        return int(self._server.server_address[1])

    @property
    def jwks_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{JWKS_PATH}"

    @property
    def fetches(self) -> int:
        """How many times the JWKS endpoint was asked for the keys."""
        with self._lock:
            return self._fetches

    def _count_fetch(self) -> None:
        with self._lock:
            self._fetches += 1

    def jwks(self) -> dict[str, Any]:
        """The key set as published now."""
        with self._lock:
            return {"keys": [self.keys[kid].public_jwk() for kid in self.published]}

    def _answer(self) -> tuple[int, bytes]:
        if self.mode == "serve":
            return 200, json.dumps(self.jwks()).encode()
        if self.mode == "error":
            return 503, b'{"error": "down for maintenance"}'
        if self.mode == "garbage":
            return 200, b"<html>not a key set</html>"
        if self.mode == "redirect":
            return 302, b""
        if self.mode == "huge":
            return 200, b'{"keys": [], "padding": "' + b"x" * (2 << 20) + b'"}'
        return 0, b""

    # ---- keys ----

    def publish(self, key: SigningKey) -> None:
        """Add ``key`` to the keys the JWKS serves."""
        with self._lock:
            self.keys[key.kid] = key
            if key.kid not in self.published:
                self.published.append(key.kid)

    def withdraw(self, kid: str) -> None:
        """Stop serving ``kid`` (the IdP still holds it: tokens can still be signed with it)."""
        with self._lock:
            self.published.remove(kid)

    def rotate(self, new: SigningKey) -> None:
        """Publish ``new`` and withdraw every key published before it."""
        old = list(self.published)
        self.publish(new)
        for kid in old:
            self.withdraw(kid)

    def provider(self, name: str = "idp", **fields: Any) -> OidcProvider:
        """The provider configuration of this IdP (its JWKS URL), ``fields`` on top."""
        config: dict[str, Any] = {"name": name, "issuer": self.issuer,
                                  "audiences": [self.audience], "jwks_url": self.jwks_url}
        return OidcProvider.model_validate({**config, **fields})

    # ---- tokens ----

    def claims(self, **overrides: Any) -> dict[str, Any]:
        """A valid ID token's claims now, with ``overrides`` (a value of None drops a claim)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer, "aud": self.audience, "sub": "player-1", "iat": now,
            "exp": now + TOKEN_SECONDS, "email": "player@example.test",
            "email_verified": True, "name": "Player One",
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def mint(self, key: SigningKey | str, *, headers: Mapping[str, Any] | None = None,
             **claims: Any) -> str:
        """An ID token signed by ``key`` (or the held key of that kid), its header naming the
        key's kid and algorithm unless ``headers`` says otherwise."""
        signer = self.keys[key] if isinstance(key, str) else key
        header = {"kid": signer.kid, **(headers or {})}
        return jwt.encode(self.claims(**claims), signer.private, algorithm=signer.alg,
                          headers=header)

    def forge_none(self, kid: str | None = None, **claims: Any) -> str:
        """An unsigned token (``alg: none``, empty signature)."""
        header: dict[str, Any] = {"alg": "none", "typ": "JWT"}
        if kid is not None:
            header["kid"] = kid
        return f"{_segment(header)}.{_segment(self.claims(**claims))}."

    def forge_hmac(self, secret: bytes, *, kid: str | None = None, alg: str = "HS256",
                   **claims: Any) -> str:
        """A token MACed with ``secret`` under an HMAC ``alg``: with a public key's PEM as the
        secret, the key-confusion attack on verifiers that let the header pick the algorithm."""
        header: dict[str, Any] = {"alg": alg, "typ": "JWT"}
        if kid is not None:
            header["kid"] = kid
        signing_input = f"{_segment(header)}.{_segment(self.claims(**claims))}"
        digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}
        mac = hmac.new(secret, signing_input.encode(), digest[alg]).digest()
        return f"{signing_input}.{_b64(mac)}"

    def forge_header(self, key: SigningKey, header: Mapping[str, Any], **claims: Any) -> str:
        """A token whose header is exactly ``header``, signed by ``key`` with its own
        algorithm whatever the header says."""
        signing_input = f"{_segment(header)}.{_segment(self.claims(**claims))}"
        algorithm = jwt.get_algorithm_by_name(key.alg)
        return f"{signing_input}.{_b64(algorithm.sign(signing_input.encode(), key.private))}"
