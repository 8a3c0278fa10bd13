"""Secrets published in dast's repository, which no deployment may run on.

Whatever the repository shows as a value of ``DAST_JWT_SECRET`` or ``DAST_SIGNING_KEY`` (the
development secret, examples in the docs, former defaults of ``deploy/local-stack.sh`` and
of the compose file, kept in every clone's history) is known to anyone: a server running on
it lets anyone mint admin tokens (and so export unfinished games with their seeds, or create
games with chosen seeds) or forge seals. Outside the embedded mode the server refuses them
at start-up (:meth:`services.platform.config.Settings.check_secrets`,
:func:`services.platform.keys.load_signer`).

Only their SHA-256 digests are kept here: the check costs one hash at start-up, and this file
publishes no new copy. ``tests/services/platform/test_published_secrets.py`` scans the
repository's files for such values and fails on one that is not refused: add its digest
here (``sha256`` of the secret's UTF-8 bytes; of the 32-byte seed for a signing key, however
it is written).
"""

from __future__ import annotations

import hashlib
from typing import Final

PUBLISHED_JWT_SECRETS: Final = frozenset({
    # services/platform/config.py DEV_JWT_SECRET (embedded mode only)
    "54950819b0ff7575317397c48dadcbd1ee862d052fc819fdfc49e057ccdfe44a",
    # deploy/local-stack.sh's former default
    "4cdcfb82b8a2ab7655c07092f7e54b5923113958900bee1804f33834e1efaf13",
    # deploy/docker-compose.yml's former default
    "cc26e790e4388dc70dd00325c941eefdc202830bc5d316fb65a4d19a806d7cbf",
})
"""SHA-256 of each published JWT secret."""

PUBLISHED_SIGNING_SEEDS: Final = frozenset({
    # deploy/local-stack.sh's former default
    "d51d977429f07764c3b29fed7d6f2dd05c6aa09ba188573e68bb815939ac7df6",
})
"""SHA-256 of the 32-byte Ed25519 seed of each published signing key."""


def digest(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex, as the sets above hold it."""
    return hashlib.sha256(data).hexdigest()


def is_published_secret(secret: str) -> bool:
    """Whether ``secret`` (surrounding spaces aside) is a published JWT secret."""
    return digest(secret.strip().encode("utf-8")) in PUBLISHED_JWT_SECRETS


def is_published_seed(seed: bytes) -> bool:
    """Whether ``seed`` is the seed of a published signing key."""
    return digest(seed) in PUBLISHED_SIGNING_SEEDS
