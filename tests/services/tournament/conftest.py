"""Fixtures of the tournament service's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.tournament.store import TournamentStore


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[TournamentStore]:
    """The tournament store on a private SQLite database, then on a fresh PostgreSQL
    schema."""
    url = None if request.param == "sqlite" else request.getfixturevalue("pg_url")
    opened = TournamentStore.open(url)
    yield opened
    opened.close()
