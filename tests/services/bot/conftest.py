"""Fixtures of the bot-service tests."""

from __future__ import annotations

from tests.e2e.helpers import open_sign_in

__all__ = ["open_sign_in"]
