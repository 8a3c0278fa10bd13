"""The accounts store on SQLite and PostgreSQL: guests' devices and their secrets, sessions,
refresh tokens spent once, profiles. (tests/services/platform/test_migrations.py checks that
the Alembic revisions make the same tables as the models.)"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from services.accounts.store import (
    DEVICES,
    REFRESH_TOKENS,
    AccountNotFound,
    AccountsStore,
    DeviceSecretMismatch,
    Profile,
    ProfileChange,
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



def test_a_new_players_profile_has_its_name_and_no_avatar_or_locale(
        store: AccountsStore) -> None:
    _guest(store)
    assert store.profile("g-0000000000000001") == Profile(
        "g-0000000000000001", "Guest-0001", "", "", NOW)


def test_an_update_changes_the_fields_it_sets_and_keeps_the_others(
        store: AccountsStore) -> None:
    _guest(store)
    _guest(store, "device-0002", player="g-0000000000000002")
    player = "g-0000000000000001"
    assert store.update_profile(player, ProfileChange(avatar_id="cat-03")) == Profile(
        player, "Guest-0001", "cat-03", "", NOW)
    assert store.update_profile(player, ProfileChange(locale="fa-IR")) == Profile(
        player, "Guest-0001", "cat-03", "fa-IR", NOW)
    assert store.update_profile(player, ProfileChange(display_name="نیما")) == Profile(
        player, "نیما", "cat-03", "fa-IR", NOW)
    # Empty values are values: no avatar, no locale.
    assert store.update_profile(player, ProfileChange(avatar_id="", locale="")) == Profile(
        player, "نیما", "", "", NOW)
    # The other player is untouched, and a sign-in answers with the new name.
    assert store.profile("g-0000000000000002").display_name == "Guest-0001"
    assert store.sign_in_guest("device-0001", digest("s" * 43), "ignored", "g-new", NOW + 1,
                               check="s" * 43).display_name == "نیما"


@pytest.mark.parametrize("player", ["g-0000000000000009", "", "x" * 300, "g-\u202e'; --"])
def test_a_player_not_stored_here_has_no_profile(store: AccountsStore, player: str) -> None:
    _guest(store)
    with pytest.raises(AccountNotFound) as missing:
        store.profile(player)
    assert "has signed in to the accounts service" in str(missing.value)
    assert len(str(missing.value)) < 120  # the id is quoted short, whatever its length
    with pytest.raises(AccountNotFound):
        store.update_profile(player, ProfileChange(avatar_id="cat"))
    assert store.profile("g-0000000000000001").avatar_id == ""


def test_a_sqlite_file_of_the_version_before_profiles_gains_their_columns(
        tmp_path: Path) -> None:
    # accounts_players as revision 0005 made it, with a player in it.
    path = tmp_path / "accounts.db"
    with sqlite3.connect(path) as old:
        old.execute("CREATE TABLE accounts_players (player_id VARCHAR(64) NOT NULL, "
                    "display_name VARCHAR(64) NOT NULL, created_ms BIGINT NOT NULL, "
                    "PRIMARY KEY (player_id))")
        old.execute("INSERT INTO accounts_players VALUES ('g-0000000000000001', 'Old', 5)")
    old.close()
    for opening, locale in enumerate(("", "ar")):  # opening again finds nothing to add
        store = AccountsStore.open(f"sqlite:///{path}")
        try:
            assert store.profile("g-0000000000000001") == Profile(
                "g-0000000000000001", "Old", "", locale, 5)
            new_player = f"g-000000000000000{opening + 2}"
            assert _guest(store, f"device-000{opening}", player=new_player) == (
                new_player, True)
            store.update_profile("g-0000000000000001", ProfileChange(locale="ar"))
        finally:
            store.close()
