"""Idle guests (services/accounts/retention.py): a guest (no identity linked) who has not
signed in for ``DAST_GUEST_IDLE_DAYS`` is erased as a deleted account is; a refresh counts
as a sign-in, and a player with an identity linked is kept however long they stay away. The
test moves the services' clock."""

from __future__ import annotations

import asyncio

import pytest

from dast.v1 import accounts_pb2, accounts_pb2_grpc
from tests.services.chat.talkers import DAY_MS, MovedClock, talking_stack

pytestmark = pytest.mark.timeout(60)

SignIn = accounts_pb2.AccountsServiceSignInGuestRequest


async def test_a_guest_idle_for_the_idle_age_is_erased_and_the_others_stay() -> None:
    clock = MovedClock()
    async with talking_stack(clock, guest_idle_days=10) as (run, channel):
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        idle, linked, back = [await accounts.SignInGuest(SignIn(
            device_id=f"retention-device-{n}")) for n in range(3)]
        store = run.stack.accounts_store
        retention = run.stack.accounts.retention if run.stack.accounts else None
        assert store is not None and retention is not None
        await asyncio.to_thread(store.link_identity, linked.player_id, "studio", "sub-1", "",
                                clock())
        clock.move(6 * DAY_MS)
        await accounts.Refresh(accounts_pb2.RefreshRequest(
            refresh_token=back.tokens.refresh_token))
        clock.move(4 * DAY_MS)
        assert await retention.erase_idle_guests() == []  # idle exactly 10 days: kept
        clock.move(1)
        assert await retention.erase_idle_guests() == [idle.player_id]
        assert not await asyncio.to_thread(store.has_player, idle.player_id)
        # The device is forgotten with its player: the app starts afresh as a new guest.
        again = await accounts.SignInGuest(SignIn(device_id="retention-device-0",
                                                  device_secret=idle.device_secret))
        assert again.player_id != idle.player_id
        assert await asyncio.to_thread(store.has_player, back.player_id)
        clock.move(6 * DAY_MS)
        assert await retention.erase_idle_guests() == [back.player_id]
        clock.move(365 * DAY_MS)
        assert await retention.erase_idle_guests() == [again.player_id]
        assert await asyncio.to_thread(store.has_player, linked.player_id)


async def test_a_player_stored_before_the_sign_in_time_existed_starts_idle_at_the_first_look(
) -> None:
    clock = MovedClock()
    async with talking_stack(clock, guest_idle_days=10) as (run, channel):
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        guest = await accounts.SignInGuest(SignIn(device_id="retention-device-old"))
        store = run.stack.accounts_store
        retention = run.stack.accounts.retention if run.stack.accounts else None
        assert store is not None and retention is not None
        # As the column's server default leaves the rows of a database upgraded to 0009.
        with store._transaction() as connection:
            connection.exec_driver_sql("UPDATE accounts_players SET last_sign_in_ms = 0")
        clock.move(30 * DAY_MS)
        assert await retention.erase_idle_guests() == []
        clock.move(10 * DAY_MS + 1)
        assert await retention.erase_idle_guests() == [guest.player_id]
