"""The keys of bearer tokens: who may sign which role, read from the settings.

Every service that issues tokens signs them with an Ed25519 key of its own
(:class:`~services.platform.auth.TokenSigner`); every server verifies them with the public
keys of a :class:`~services.platform.auth.TokenKeyRing`, each trusted for some roles only.
Two settings carry them, each a JSON document or the path of a file holding one:

- ``DAST_TOKEN_KEYS``, the same for every process: the public keys, JWK-like::

      {"keys": [{"kid": "lobby-1", "kty": "OKP", "crv": "Ed25519",
                 "x": "<base64url of the 32-byte public key>", "roles": ["player", "service"]}]}

- ``DAST_TOKEN_SIGNING_KEYS``, each process its own: the private keys of the issuers it
  runs (:data:`SERVICE_ISSUERS`; a game replica runs none and gets none), one per issuer::

      {"keys": [{"issuer": "lobby", "kid": "lobby-1", "kty": "OKP", "crv": "Ed25519",
                 "d": "<base64url of the 32-byte private seed>"}]}

:func:`load_token_keys` checks them at start (a signing key the ring does not trust for
the roles its issuer signs, a key of an issuer the process does not run, private material
in the ring, a key published in dast's repository) and says what is wrong. The embedded
backend (no database or NATS URL) makes every issuer's key on first start and keeps them
under the data dir (``token_keys.json``, mode 0600), as :mod:`services.platform.keys` does
for the log-signing key.

Rotation: add the new key to every process's ring, then give the issuer the new private
key, then remove the old kid from the rings once the tokens it signed have expired
(docs/deploy.md "Rotating a token key").
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from services.platform.auth import Role, TokenKeyRing, TokenSigner, TrustedKey
from services.platform.published_secrets import is_published_seed

ISSUER_ROLES: Final[Mapping[str, frozenset[Role]]] = {
    "accounts": frozenset({Role.PLAYER}),
    "lobby": frozenset({Role.PLAYER, Role.SERVICE}),
    "bot": frozenset({Role.SERVICE}),
    "stats": frozenset({Role.SERVICE}),
    "tournament": frozenset({Role.SERVICE, Role.REFEREE}),
    "operator": frozenset({Role.PLAYER, Role.SERVICE, Role.ADMIN, Role.REFEREE}),
}
"""What each issuer signs: the accounts service its players' access tokens; the lobby its
guests' tokens and the service token it calls the game service with; the bots, the stats
and the tournament services service tokens (the tournament service a referee token too: it
reads the log of a match still running for its time-limit rule, and nothing more);
the operator (``dast token``, the embedded banner's admin token) any role. The roles a
ring trusts a key for must include its issuer's."""
SERVICE_ISSUERS: Final[Mapping[str, str]] = {
    "accounts": "accounts", "lobby": "lobby", "bot": "bot", "stats": "stats",
    "tournament": "tournament",
}
"""The issuer whose key a service signs with; the game service issues no token."""
OPERATOR: Final = "operator"
EMBEDDED_KEYS_FILE: Final = "token_keys.json"
SEED_BYTES: Final = 32
_KID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_PRIVATE_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "k"})
MAKE_KEYS_HINT: Final = (
    "make them with: .venv/bin/python -m services.platform.token_keys ISSUER... "
    "(docs/deploy.md \"Token keys\")"
)


class TokenKeyError(ValueError):
    """Token keys that are missing, malformed or inconsistent; the message says which."""


@dataclass(frozen=True)
class TokenKeys:
    """What one process holds: the ring every token it receives is checked against, and
    the private keys of the issuers it runs."""

    ring: TokenKeyRing
    signers: Mapping[str, TokenSigner]

    def signer(self, issuer: str) -> TokenSigner:
        """The key ``issuer`` signs with.

        :raises TokenKeyError: if this process holds none for it.
        """
        found = self.signers.get(issuer)
        if found is None:
            raise TokenKeyError(
                f"no signing key for {issuer!r} in DAST_TOKEN_SIGNING_KEYS; {MAKE_KEYS_HINT}")
        return found

    def only(self, issuers: Iterable[str]) -> TokenKeys:
        """The same ring with only the private keys of ``issuers`` (what a process running
        just those services is given)."""
        wanted = set(issuers)
        return TokenKeys(self.ring, {name: signer for name, signer in self.signers.items()
                                     if name in wanted})

    def for_services(self, services: Iterable[str]) -> TokenKeys:
        """The keys a process running ``services`` is given (:data:`SERVICE_ISSUERS`)."""
        return self.only(SERVICE_ISSUERS[name] for name in services if name in SERVICE_ISSUERS)

    def ring_document(self) -> str:
        """The ring as ``DAST_TOKEN_KEYS`` holds it."""
        return ring_document(self.ring)

    def signing_document(self) -> str:
        """The private keys as ``DAST_TOKEN_SIGNING_KEYS`` holds them."""
        return signing_document(self.signers.values())

    def environment(self) -> dict[str, str]:
        """``DAST_TOKEN_KEYS``, and ``DAST_TOKEN_SIGNING_KEYS`` unless it holds no private
        key, for a process given these."""
        environment = {"DAST_TOKEN_KEYS": self.ring_document()}
        if self.signers:
            environment["DAST_TOKEN_SIGNING_KEYS"] = self.signing_document()
        return environment


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: object, what: str) -> bytes:
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9_-]{43}=?", text):
        raise TokenKeyError(f"{what} must be the base64url of {SEED_BYTES} bytes")
    try:
        raw = base64.urlsafe_b64decode(text.rstrip("=") + "=")
    except (binascii.Error, ValueError) as error:
        raise TokenKeyError(f"{what} is not base64url") from error
    if len(raw) != SEED_BYTES:
        raise TokenKeyError(f"{what} must be the base64url of {SEED_BYTES} bytes")
    return raw


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def generate_token_keys(issuers: Iterable[str] = ISSUER_ROLES, *, suffix: str = "1") -> TokenKeys:
    """Fresh keys for ``issuers`` (kids ``<issuer>-<suffix>``), and the ring trusting each
    for its issuer's roles."""
    signers = {name: TokenSigner.generate(name, f"{name}-{suffix}") for name in issuers}
    return TokenKeys(
        TokenKeyRing.trusting({signer: ISSUER_ROLES[name] for name, signer in signers.items()}),
        signers)


def ring_document(ring: TokenKeyRing) -> str:
    """``ring`` as ``DAST_TOKEN_KEYS`` holds it (public keys only)."""
    return json.dumps({"keys": [
        {"kid": key.kid, "kty": "OKP", "crv": "Ed25519", "x": _b64(_raw_public(key.public_key)),
         "roles": sorted(str(role) for role in key.roles)}
        for key in ring.keys]}, separators=(",", ":"))


def signing_document(signers: Iterable[TokenSigner]) -> str:
    """``signers`` as ``DAST_TOKEN_SIGNING_KEYS`` holds them."""
    return json.dumps({"keys": [
        {"issuer": signer.issuer, "kid": signer.kid, "kty": "OKP", "crv": "Ed25519",
         "d": _b64(signer.seed)}
        for signer in signers]}, separators=(",", ":"))


def _document(value: str, setting: str) -> list[dict[str, Any]]:
    """The key objects of a setting's JSON document (inline, or in the file it names)."""
    text = value.strip()
    if not text.startswith(("{", "[")):
        path = Path(text).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise TokenKeyError(
                f"{setting} is neither a JSON document nor a readable file: cannot read "
                f"{str(path)[:200]!r} ({type(error).__name__})") from None
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise TokenKeyError(f"{setting} is not valid JSON ({error.__class__.__name__} "
                            f"at character {getattr(error, 'pos', '?')})") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list) or not keys:
        raise TokenKeyError(f'{setting} must be an object {{"keys": [...]}} with at least '
                            "one key")
    for index, key in enumerate(keys):
        if not isinstance(key, dict):
            raise TokenKeyError(f"{setting} key {index} is not an object")
    return keys


def _kid(key: Mapping[str, Any], setting: str, index: int) -> str:
    kid = key.get("kid")
    if not isinstance(kid, str) or not _KID.fullmatch(kid):
        raise TokenKeyError(f"{setting} key {index}: kid must be 1 to 64 letters, digits, "
                            "'.', '_' or '-' (starting with a letter or digit)")
    if key.get("kty") != "OKP" or key.get("crv") != "Ed25519":
        raise TokenKeyError(f"{setting} key {kid!r}: only Ed25519 keys are used "
                            '("kty": "OKP", "crv": "Ed25519")')
    return kid


def parse_key_ring(value: str) -> TokenKeyRing:
    """The ring ``DAST_TOKEN_KEYS`` holds (a JSON document or a file's path).

    :raises TokenKeyError: for a malformed document, a duplicate kid, a key without roles
        or with an unknown one, or private key material.
    """
    setting = "DAST_TOKEN_KEYS"
    trusted: dict[str, TrustedKey] = {}
    for index, key in enumerate(_document(value, setting)):
        kid = _kid(key, setting, index)
        if _PRIVATE_MEMBERS & key.keys():
            raise TokenKeyError(f"{setting} key {kid!r} holds private key material: the ring "
                                "takes public keys only (the private key goes in the "
                                "issuer's DAST_TOKEN_SIGNING_KEYS)")
        if kid in trusted:
            raise TokenKeyError(f"{setting} names the kid {kid!r} twice")
        roles = key.get("roles")
        if not isinstance(roles, list) or not roles or not all(
                isinstance(role, str) and role in set(Role) for role in roles):
            raise TokenKeyError(f"{setting} key {kid!r}: roles must be a non-empty list of "
                                f"{', '.join(str(role) for role in Role)}")
        public = Ed25519PublicKey.from_public_bytes(_unb64(key.get("x"), f"{setting} key "
                                                                         f"{kid!r}: x"))
        trusted[kid] = TrustedKey(kid, public, frozenset(Role(role) for role in roles))
    return TokenKeyRing(trusted.values())


def parse_signing_keys(value: str) -> dict[str, TokenSigner]:
    """The private keys ``DAST_TOKEN_SIGNING_KEYS`` holds, by issuer.

    :raises TokenKeyError: for a malformed document, an unknown issuer, two keys of one
        issuer, or a seed published in dast's repository.
    """
    setting = "DAST_TOKEN_SIGNING_KEYS"
    signers: dict[str, TokenSigner] = {}
    for index, key in enumerate(_document(value, setting)):
        kid = _kid(key, setting, index)
        issuer = key.get("issuer")
        if not isinstance(issuer, str) or issuer not in ISSUER_ROLES:
            raise TokenKeyError(f"{setting} key {kid!r}: issuer must be one of "
                                f"{', '.join(ISSUER_ROLES)}")
        if issuer in signers:
            raise TokenKeyError(f"{setting} holds two keys of {issuer!r}: an issuer signs "
                                "with one key (the ring may trust two while it rotates)")
        seed = _unb64(key.get("d"), f"{setting} key {kid!r}: d")
        if is_published_seed(seed):
            raise TokenKeyError(f"{setting} key {kid!r} is a key published in dast's "
                                f"repository: anyone could sign its tokens; {MAKE_KEYS_HINT}")
        signers[issuer] = TokenSigner(issuer, kid, Ed25519PrivateKey.from_private_bytes(seed))
    return signers


def check_keys(keys: TokenKeys, issuers: Iterable[str], *, only_these: bool = True) -> None:
    """Refuse keys a process running ``issuers`` would fail with.

    :raises TokenKeyError: when a signing key is missing for one of ``issuers``, held for
        another issuer (when ``only_these``: a server must hold only its own), or not
        trusted by the ring (unknown kid, another public key, or without the roles its
        issuer signs).
    """
    wanted = set(issuers)
    missing = sorted(wanted - keys.signers.keys())
    if missing:
        raise TokenKeyError(
            f"DAST_TOKEN_SIGNING_KEYS has no key for {', '.join(missing)}, which this process "
            f"signs with; {MAKE_KEYS_HINT}")
    extra = sorted(keys.signers.keys() - wanted)
    if extra and only_these:
        raise TokenKeyError(
            f"DAST_TOKEN_SIGNING_KEYS holds keys of {', '.join(extra)}, which this process "
            "does not run: give each process only the keys of its own services")
    for issuer, signer in keys.signers.items():
        trusted = keys.ring.get(signer.kid)
        if trusted is None or _raw_public(trusted.public_key) != _raw_public(signer.public_key):
            raise TokenKeyError(
                f"the signing key {signer.kid!r} of {issuer!r} is not in DAST_TOKEN_KEYS (or "
                "the ring has another public key under its kid): add its public key to "
                "every process's ring first")
        lacking = ISSUER_ROLES[issuer] - trusted.roles
        if issuer != OPERATOR and lacking:
            raise TokenKeyError(
                f"DAST_TOKEN_KEYS trusts {signer.kid!r} without the roles {issuer!r} signs "
                f"({', '.join(sorted(lacking))}): its tokens would be refused")


def embedded_token_keys(data_dir: Path) -> TokenKeys:
    """The embedded backend's keys under ``data_dir``, made (mode 0600) on first use."""
    path = data_dir / EMBEDDED_KEYS_FILE
    if not path.exists():
        made = generate_token_keys()
        data_dir.mkdir(parents=True, exist_ok=True)
        # O_EXCL: two processes starting at once must not both write (and disagree on) them.
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(made.signing_document())
            return made
    signers = parse_signing_keys(str(path))
    return TokenKeys(TokenKeyRing.trusting(
        {signer: ISSUER_ROLES[name] for name, signer in signers.items()}), signers)


def load_token_keys(ring: str | None, signing: str | None, *, services: Iterable[str],
                    embedded: bool, data_dir: Path, operator: bool = False,
                    only_these: bool = True) -> TokenKeys:
    """The token keys of a process running ``services`` (plus the operator's key when
    ``operator``: ``dast token``), from ``DAST_TOKEN_KEYS`` (``ring``) and
    ``DAST_TOKEN_SIGNING_KEYS`` (``signing``); the embedded backend without them makes and
    keeps its own under ``data_dir``. A server (``only_these``) refuses keys of issuers it
    does not run; the keys it returns are those of its issuers only in any case.

    :raises TokenKeyError: saying what is missing or wrong.
    """
    issuers = {SERVICE_ISSUERS[name] for name in services if name in SERVICE_ISSUERS}
    if operator:
        issuers.add(OPERATOR)
    if embedded and not ring and not signing:
        return embedded_token_keys(data_dir).only(issuers)
    if not ring:
        raise TokenKeyError(
            "DAST_TOKEN_KEYS is required outside the embedded mode (and beside "
            "DAST_TOKEN_SIGNING_KEYS): the public keys every process verifies tokens with; "
            + MAKE_KEYS_HINT)
    keys = TokenKeys(parse_key_ring(ring), parse_signing_keys(signing) if signing else {})
    check_keys(keys, issuers, only_these=only_these)
    return keys.only(issuers)


def write_key_files(keys: TokenKeys, folder: Path) -> list[Path]:
    """Write ``keys`` into ``folder``: the ring as ``token_keys.json`` and each issuer's
    private key as ``token_key_<issuer>.json`` (mode 0600, never over an existing file);
    the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    files = [(folder / "token_keys.json", keys.ring_document())] + [
        (folder / f"token_key_{issuer}.json", keys.only([issuer]).signing_document())
        for issuer in keys.signers]
    for path, text in files:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text + "\n")
    return [path for path, _ in files]


def main(argv: list[str]) -> int:
    """``python -m services.platform.token_keys ISSUER... [--suffix S] [--out DIR]``: new
    keys for the issuers (kids ``<issuer>-<S>``), printed as two lines
    (``DAST_TOKEN_KEYS``, then ``DAST_TOKEN_SIGNING_KEYS`` with every key), or written as
    files into ``DIR`` (:func:`write_key_files`)."""
    options: dict[str, str] = {"--suffix": "1", "--out": ""}
    rest: list[str] = []
    words = iter(argv)
    for word in words:
        if word in options:
            options[word] = next(words, "")
        else:
            rest.append(word)
    suffix = options["--suffix"]
    if not rest or any(name not in ISSUER_ROLES for name in rest) or not _KID.fullmatch(
            f"x-{suffix}"):
        print("usage: python -m services.platform.token_keys ISSUER... [--suffix S] "
              f"[--out DIR] (issuers: {', '.join(ISSUER_ROLES)})", file=sys.stderr)
        return 2
    keys = generate_token_keys(rest, suffix=suffix)
    if options["--out"]:
        try:
            written = write_key_files(keys, Path(options["--out"]))
        except FileExistsError as error:
            print(f"{error.filename} exists: keys are never overwritten", file=sys.stderr)
            return 1
        print("\n".join(str(path) for path in written))
        return 0
    print(keys.ring_document())
    print(keys.signing_document())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
