"""The server's log-signing key: loaded like the JWT secret, and the seals it makes.

``DAST_SIGNING_KEY`` holds the Ed25519 private key, either as the base64 of its 32-byte seed
or as the path of a PKCS#8 PEM file. The embedded backend (no database URL, no NATS URL)
makes one on first start and keeps it under the data dir (``signing_key.pem``, mode 0600),
so its exports stay verifiable across restarts; any other deployment must configure one,
since every replica has to seal with the same key, and not one published in dast's
repository (:mod:`services.platform.published_secrets`): anyone could forge its seals.
:mod:`engine.core.seal` documents what a seal signs and verifies it.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dast.v1 import log_pb2
from engine.core.seal import seal_message
from services.platform.config import MAKE_SIGNING_KEY_HINT, Settings
from services.platform.published_secrets import is_published_seed

SEED_BYTES: Final = 32
EMBEDDED_KEY_FILE: Final = "signing_key.pem"


class SigningKeyError(ValueError):
    """Raised when the configured signing key is missing or unreadable."""


@dataclass(frozen=True)
class LogSigner:
    """Seals finished logs with one Ed25519 key."""

    private_key: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> LogSigner:
        """A fresh key (tests, and the first start of the embedded backend)."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> LogSigner:
        """The key whose 32-byte private seed is ``seed``.

        :raises SigningKeyError: if ``seed`` is not 32 bytes.
        """
        if len(seed) != SEED_BYTES:
            raise SigningKeyError(f"an Ed25519 seed has {SEED_BYTES} bytes, not {len(seed)}")
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @property
    def public_key(self) -> bytes:
        """The raw 32-byte public key (what ``GetSigningKey`` serves)."""
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    @property
    def seed(self) -> bytes:
        """The 32-byte private seed (what ``DAST_SIGNING_KEY`` holds in base64)."""
        return self.private_key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )

    def pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM."""
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def seal(self, game_id: str, seq: int, head_hash: bytes) -> log_pb2.LogSeal:
        """The seal over the log of ``game_id`` whose last event ``seq`` has ``head_hash``."""
        signature = self.private_key.sign(seal_message(game_id, seq, head_hash))
        return log_pb2.LogSeal(
            game_id=game_id, seq=seq, head_hash=head_hash,
            public_key=self.public_key, signature=signature,
        )


def _from_pem(path: Path) -> LogSigner:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise SigningKeyError(f"cannot read an Ed25519 key from {path}: {error}") from error
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return LogSigner(key)


def parse_signing_key(value: str) -> LogSigner:
    """The key ``DAST_SIGNING_KEY`` names: base64 of the 32-byte seed, or a PEM file's path.

    A seed's base64 may start with ``/`` (one seed in 64 does): it is read as a seed unless
    a file of that name exists.

    :raises SigningKeyError: when it is neither.
    """
    text = value.strip()
    path = Path(text).expanduser()
    if path.is_file():
        return _from_pem(path)
    try:
        seed = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        seed = None
    if seed is not None and len(seed) == SEED_BYTES:
        return LogSigner.from_seed(seed)
    if text.startswith(("/", ".", "~")) or path.suffix == ".pem":
        return _from_pem(path)  # a path to no readable file: the error says which
    if seed is None:
        raise SigningKeyError(
            f"DAST_SIGNING_KEY is neither base64 nor a PEM file's path; {MAKE_SIGNING_KEY_HINT}"
        )
    raise SigningKeyError(
        f"DAST_SIGNING_KEY decodes to {len(seed)} bytes, not {SEED_BYTES}; "
        + MAKE_SIGNING_KEY_HINT
    )


def embedded_signer(data_dir: Path) -> LogSigner:
    """The embedded backend's key under ``data_dir``, made (mode 0600) on first use."""
    path = data_dir / EMBEDDED_KEY_FILE
    if path.exists():
        return _from_pem(path)
    signer = LogSigner.generate()
    data_dir.mkdir(parents=True, exist_ok=True)
    # O_EXCL: two processes starting at once must not both write (and disagree on) the key.
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _from_pem(path)
    with os.fdopen(descriptor, "wb") as file:
        file.write(signer.pem())
    return signer


def load_signer(settings: Settings) -> LogSigner:
    """The signing key of a process: ``DAST_SIGNING_KEY`` when set, else (embedded mode) the
    one kept under the data dir.

    :raises SigningKeyError: when the configured key is unreadable, or, outside the embedded
        mode, when none is configured or it is one published in dast's repository.
    """
    if settings.signing_key:
        signer = parse_signing_key(settings.signing_key)
        if not settings.is_embedded() and is_published_seed(signer.seed):
            raise SigningKeyError(
                "DAST_SIGNING_KEY is a key published in dast's repository (an example or a "
                "former default): anyone could forge the seals of its logs; "
                + MAKE_SIGNING_KEY_HINT
            )
        return signer
    if not settings.is_embedded():
        raise SigningKeyError(f"DAST_SIGNING_KEY is required; {MAKE_SIGNING_KEY_HINT}")
    return embedded_signer(settings.data_dir)
