"""Registering the tiny game for a test, through the registry alone, and back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from engine import registry
from engine.core.protocol import Game
from tests.support.tiny import game as tiny


@contextmanager
def tiny_registered() -> Iterator[Game]:
    """The tiny game served by the engine (as registered) while the block runs."""
    served = registry.register(tiny)  # type: ignore[arg-type]
    try:
        yield served
    finally:
        registry.unregister(tiny.GAME_TYPE)
