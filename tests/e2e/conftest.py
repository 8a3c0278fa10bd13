"""Fixtures of the end-to-end tests (the play stack over real gRPC on loopback)."""

from __future__ import annotations

from tests.e2e.helpers import open_sign_in

__all__ = ["open_sign_in"]
