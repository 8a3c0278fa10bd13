"""The accounts store on SQLite and PostgreSQL: guests' devices and their secrets, sessions,
refresh tokens spent once. (tests/services/platform/test_migrations.py checks that the Alembic
revisions make the same tables as the models.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from services.accounts.store import (
    DEVICES,
    REFRESH_TOKENS,
    AccountsStore,
    DeviceSecretMismatch,
    RefreshRefused,
    digest,
)

NOW = 1_800_000_000_000
DAY_MS = 86_400_000


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[AccountsStore]:
    url = None if request.param == "sqlite" else request.getfixturevalue("pg_url")
    opened = AccountsStore.open(url)
    yield opened
    opened.close()


def _guest(store: AccountsStore, device: str = "device-0001", secret: str = "s" * 43,
           *, check: str | None = None, player: str = "g-0000000000000001") -> tuple[str, bool]:
    signed_in = store.sign_in_guest(device, digest(secret), "Guest-0001", player, NOW,
                                    check=check)
    return signed_in.player_id, signed_in.is_new


def test_a_devices_first_sign_in_makes_a_player_and_keeps_only_the_secrets_digest(
        store: AccountsStore) -> None:
    assert _guest(store) == ("g-0000000000000001", True)
    with store._reading() as connection:
        stored = connection.execute(select(DEVICES.c.secret_digest)).scalar_one()
    assert bytes(stored) == digest("s" * 43)
    assert b"s" * 43 not in bytes(stored)


def test_a_known_device_needs_its_secret(store: AccountsStore) -> None:
    _guest(store)
    for wrong in (None, "", "t" * 43, "s" * 42):
        with pytest.raises(DeviceSecretMismatch):
            _guest(store, check=wrong, player="g-0000000000000002")
    # The right secret reaches the first player; the new id offered is not used.
    assert _guest(store, check="s" * 43, player="g-0000000000000002") == (
        "g-0000000000000001", False)


def _session(store: AccountsStore, token: str = "r1", session: str = "sid-1",
             player: str = "g-0000000000000001") -> None:
    store.open_session(session, player, digest(token), NOW, NOW + 30 * DAY_MS)


def test_a_refresh_token_is_spent_once_and_the_next_one_works(store: AccountsStore) -> None:
    _session(store)
    renewed = store.rotate(digest("r1"), digest("r2"), NOW + 1, NOW + 31 * DAY_MS)
    assert (renewed.session_id, renewed.player_id) == ("sid-1", "g-0000000000000001")
    assert store.rotate(digest("r2"), digest("r3"), NOW + 2, NOW + 31 * DAY_MS).session_id == (
        "sid-1")
    assert store.is_session_open("sid-1")


def test_reusing_a_spent_refresh_token_ends_its_session(store: AccountsStore) -> None:
    _session(store)
    store.rotate(digest("r1"), digest("r2"), NOW + 1, NOW + 31 * DAY_MS)
    with pytest.raises(RefreshRefused) as reused:
        store.rotate(digest("r1"), digest("stolen-next"), NOW + 2, NOW + 31 * DAY_MS)
    assert reused.value.reused
    assert not store.is_session_open("sid-1")
    # The token the rightful holder had is worthless now, and so is the thief's attempt's.
    for token in ("r2", "stolen-next"):
        with pytest.raises(RefreshRefused) as refused:
            store.rotate(digest(token), digest("r9"), NOW + 3, NOW + 31 * DAY_MS)
        assert not refused.value.reused


def test_an_expired_or_unknown_refresh_token_is_refused(store: AccountsStore) -> None:
    _session(store)
    for token, at in (("r1", NOW + 30 * DAY_MS), ("unknown", NOW)):
        with pytest.raises(RefreshRefused) as refused:
            store.rotate(digest(token), digest("r2"), at, at + DAY_MS)
        assert not refused.value.reused
    assert store.is_session_open("sid-1")  # an expired token does not end the session


def test_ending_sessions(store: AccountsStore) -> None:
    _session(store, "r1", "sid-1")
    _session(store, "r2", "sid-2")
    _session(store, "r3", "sid-3", player="g-0000000000000009")
    assert not store.end_session("sid-1", "g-0000000000000009", NOW)  # not theirs
    assert store.end_session("sid-1", "g-0000000000000001", NOW)
    assert not store.end_session("sid-1", "g-0000000000000001", NOW)  # ended already
    assert store.end_sessions_of("g-0000000000000001", NOW) == ["sid-2"]
    assert [store.is_session_open(s) for s in ("sid-1", "sid-2", "sid-3")] == [
        False, False, True]
    with pytest.raises(RefreshRefused):
        store.rotate(digest("r2"), digest("r4"), NOW + 1, NOW + DAY_MS)


def test_racing_refreshes_of_one_token_let_exactly_one_win(pg_url: str) -> None:
    store = AccountsStore.open(pg_url)
    try:
        _session(store)
        outcomes: list[str] = []
        start = threading.Barrier(4)

        def spend(number: int) -> None:
            start.wait()
            try:
                store.rotate(digest("r1"), digest(f"next-{number}"), NOW + 1, NOW + DAY_MS)
                outcomes.append("renewed")
            except RefreshRefused as refused:
                outcomes.append("reused" if refused.reused else "refused")

        threads = [threading.Thread(target=spend, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert outcomes.count("renewed") == 1
        assert not store.is_session_open("sid-1")  # the losers were reuses: session ended
        with store._reading() as connection:
            live = connection.execute(
                select(REFRESH_TOKENS.c.token_digest).where(REFRESH_TOKENS.c.spent_ms == 0)
            ).scalars().all()
        assert len(live) == 1
    finally:
        store.close()

