"""Signing in with an identity provider's ID token and linking identities to players, over
gRPC on the whole embedded stack with a local identity provider (tests/support/idp.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import grpc
import pytest

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    common_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from tests.e2e.helpers import stack
from tests.services.accounts.calls import refused, session_bearer
from tests.support.idp import LocalIdp, ec_key, ed25519_key, rsa_key

pytestmark = pytest.mark.timeout(120)

SignIn = accounts_pb2.SignInWithIdTokenRequest
Link = accounts_pb2.LinkIdentityRequest
Unlink = accounts_pb2.UnlinkIdentityRequest


@dataclass
class Idps:
    """Two providers: ``main`` signing with RS256, ES256 and EdDSA keys, and ``other``."""

    main: LocalIdp
    other: LocalIdp

    def providers(self) -> str:
        return json.dumps([self.main.provider("main").model_dump(mode="json"),
                           self.other.provider("other").model_dump(mode="json")])


@pytest.fixture(scope="module")
def idps() -> Iterator[Idps]:
    with LocalIdp([rsa_key("r1"), ec_key("e1"), ed25519_key("d1")]) as main, \
            LocalIdp([rsa_key("o1")], issuer="https://other.example.test") as other:
        yield Idps(main, other)


@pytest.fixture
async def channel(idps: Idps) -> AsyncIterator[grpc.aio.Channel]:
    async with stack(timers=False, bots=False, oidc_providers=idps.providers()) as run, \
            grpc.aio.insecure_channel(run.address) as opened:
        yield opened


@pytest.fixture
def accounts(channel: grpc.aio.Channel) -> accounts_pb2_grpc.AccountsServiceStub:
    return accounts_pb2_grpc.AccountsServiceStub(channel)


@pytest.mark.parametrize("kid", ["r1", "e1", "d1"])
async def test_an_id_token_of_each_algorithm_creates_a_player_then_reaches_it(
        accounts: accounts_pb2_grpc.AccountsServiceStub, idps: Idps, kid: str) -> None:
    subject = f"person-{kid}"
    first = await accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint(kid, sub=subject)))
    assert first.created and first.player_id.startswith("a-")
    assert first.display_name == "Player One"  # the token's name
    # Another device, a fresh ID token, the provider found by the token's issuer: the same
    # player, in a new session.
    again = await accounts.SignInWithIdToken(SignIn(id_token=idps.main.mint(kid, sub=subject)))
    assert (again.player_id, again.created) == (first.player_id, False)
    assert again.tokens.session_id != first.tokens.session_id
    listed = await accounts.ListIdentities(accounts_pb2.ListIdentitiesRequest(),
                                           metadata=session_bearer(again.tokens))
    assert [(i.provider, i.subject, i.email) for i in listed.identities] == [
        ("main", subject, "player@example.test")]
    assert listed.devices == 0


async def test_a_guest_links_an_identity_and_keeps_its_player_id(
        accounts: accounts_pb2_grpc.AccountsServiceStub, idps: Idps) -> None:
    guest = await accounts.SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
        device_id="linking-phone-1", display_name="Shirin"))
    linked = await accounts.LinkIdentity(Link(
        provider="main", id_token=idps.main.mint("r1", sub="shirin", email_verified=False)),
        metadata=session_bearer(guest.tokens))
    assert (linked.identity.provider, linked.identity.subject) == ("main", "shirin")
    assert linked.identity.email == ""  # an address the provider did not verify is not kept
    # Linking it again changes nothing.
    assert (await accounts.LinkIdentity(Link(id_token=idps.main.mint("e1", sub="shirin")),
                                        metadata=session_bearer(guest.tokens))).identity == \
        linked.identity
    # A new device signs in with the identity and reaches the guest's own player (its
    # ratings, history and tournament entries are stored under this id).
    tablet = await accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint("d1", sub="shirin")))
    assert (tablet.player_id, tablet.display_name, tablet.created) == (
        guest.player_id, "Shirin", False)
    listed = await accounts.ListIdentities(accounts_pb2.ListIdentitiesRequest(),
                                           metadata=session_bearer(tablet.tokens))
    assert ([i.subject for i in listed.identities], listed.devices) == (["shirin"], 1)


async def test_an_identity_belongs_to_one_player_and_a_player_has_one_per_provider(
        accounts: accounts_pb2_grpc.AccountsServiceStub, idps: Idps) -> None:
    owner = await accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint("r1", sub="taken")))
    guest = await accounts.SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
        device_id="linking-phone-2"))
    assert await refused(accounts.LinkIdentity(
        Link(provider="main", id_token=idps.main.mint("r1", sub="taken")),
        metadata=session_bearer(guest.tokens))) == (
        grpc.StatusCode.FAILED_PRECONDITION, "identity_linked_elsewhere")
    assert await refused(accounts.LinkIdentity(
        Link(provider="main", id_token=idps.main.mint("r1", sub="second")),
        metadata=session_bearer(owner.tokens))) == (
        grpc.StatusCode.FAILED_PRECONDITION, "provider_already_linked")
    # Another provider's identity links, and signs in to the same player.
    await accounts.LinkIdentity(Link(provider="other", id_token=idps.other.mint("o1",
                                sub="taken")), metadata=session_bearer(owner.tokens))
    via_other = await accounts.SignInWithIdToken(SignIn(
        provider="other", id_token=idps.other.mint("o1", sub="taken")))
    assert via_other.player_id == owner.player_id


async def test_unlinking_never_removes_the_last_way_in(
        accounts: accounts_pb2_grpc.AccountsServiceStub, idps: Idps) -> None:
    account = await accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint("r1", sub="only-one")))
    bearer = session_bearer(account.tokens)
    assert await refused(accounts.UnlinkIdentity(
        Unlink(provider="main", subject="only-one"), metadata=bearer)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "last_way_in")
    await accounts.LinkIdentity(Link(provider="other", id_token=idps.other.mint(
        "o1", sub="spare")), metadata=bearer)
    await accounts.UnlinkIdentity(Unlink(provider="main", subject="only-one"), metadata=bearer)
    assert await refused(accounts.UnlinkIdentity(
        Unlink(provider="main", subject="only-one"), metadata=bearer)) == (
        grpc.StatusCode.NOT_FOUND, "identity_not_linked")
    assert await refused(accounts.UnlinkIdentity(
        Unlink(provider="other", subject="spare"), metadata=bearer)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "last_way_in")
    # The unlinked identity is free: its next sign-in makes a new player.
    fresh = await accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint("r1", sub="only-one")))
    assert fresh.created and fresh.player_id != account.player_id
    # A guest's device is a way in: its only identity may go.
    guest = await accounts.SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
        device_id="linking-phone-3"))
    await accounts.LinkIdentity(Link(provider="main", id_token=idps.main.mint(
        "r1", sub="guest-link")), metadata=session_bearer(guest.tokens))
    await accounts.UnlinkIdentity(Unlink(provider="main", subject="guest-link"),
                                  metadata=session_bearer(guest.tokens))
    listed = await accounts.ListIdentities(accounts_pb2.ListIdentitiesRequest(),
                                           metadata=session_bearer(guest.tokens))
    assert (list(listed.identities), listed.devices) == ([], 1)


async def test_identity_calls_check_their_fields_and_the_caller(
        channel: grpc.aio.Channel, accounts: accounts_pb2_grpc.AccountsServiceStub,
        idps: Idps) -> None:
    assert await refused(accounts.SignInWithIdToken(SignIn(provider="main"))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    assert await refused(accounts.SignInWithIdToken(SignIn(
        provider="nobody", id_token=idps.main.mint("r1")))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "unknown_identity_provider")
    assert await refused(accounts.SignInWithIdToken(SignIn(
        provider="x" * 33, id_token=idps.main.mint("r1")))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    assert await refused(accounts.SignInWithIdToken(SignIn(
        provider="other", id_token=idps.other.mint("o1", iss=idps.main.issuer)))) == (
        grpc.StatusCode.UNAUTHENTICATED, "id_token_wrong_issuer")
    assert await refused(accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint("r1", exp=1)))) == (
        grpc.StatusCode.UNAUTHENTICATED, "id_token_expired")
    assert await refused(accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint("r1"), display_name="\u200b"))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "invalid_display_name")
    named = await accounts.SignInWithIdToken(SignIn(
        provider="main", id_token=idps.main.mint("r1", sub="named", name=None),
        display_name="Dara"))
    assert named.display_name == "Dara"
    bearer = session_bearer(named.tokens)
    for subject in ("", "s" * 256, "bad\nsubject"):
        assert await refused(accounts.UnlinkIdentity(
            Unlink(provider="main", subject=subject), metadata=bearer)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    assert await refused(accounts.UnlinkIdentity(
        Unlink(subject="named"), metadata=bearer)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    # Linking and unlinking need a session of the accounts service (not a lobby guest's).
    lobby_guest = await lobby_pb2_grpc.LobbyServiceStub(channel).SignInGuest(
        lobby_pb2.SignInGuestRequest(device_id="lobby-device-9"))
    lobby_bearer = (("authorization", f"Bearer {lobby_guest.token}"),)
    assert await refused(accounts.LinkIdentity(
        Link(provider="main", id_token=idps.main.mint("r1", sub="lobby")),
        metadata=lobby_bearer)) == (grpc.StatusCode.FAILED_PRECONDITION, "no_session")
    assert await refused(accounts.ListIdentities(accounts_pb2.ListIdentitiesRequest())) == (
        grpc.StatusCode.UNAUTHENTICATED, "unauthenticated")


async def test_a_guest_who_links_an_identity_counts_as_an_account(idps: Idps) -> None:
    # Where only accounts may create tournaments, a guest may not, and may once an identity
    # is linked: its next tokens say so (the claim acct), though its id stays a guest's.
    async with stack(timers=False, bots=False, oidc_providers=idps.providers(),
                     tournament_creators="accounts") as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        tournaments = tournament_pb2_grpc.TournamentServiceStub(channel)
        create = tournament_pb2.CreateTournamentRequest(settings=tournament_pb2.TournamentSettings(
            name="friday", game_type=common_pb2.GAME_TYPE_HOKM, players_per_table=2, rounds=1))
        guest = await accounts.SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
            device_id="linking-phone-9"))
        assert await refused(tournaments.CreateTournament(
            create, metadata=session_bearer(guest.tokens))) == (
            grpc.StatusCode.PERMISSION_DENIED, "tournament_creation_restricted")
        await accounts.LinkIdentity(Link(provider="main", id_token=idps.main.mint(
            "r1", sub="guest-turned-account")), metadata=session_bearer(guest.tokens))
        renewed = await accounts.Refresh(accounts_pb2.RefreshRequest(
            refresh_token=guest.tokens.refresh_token))
        assert renewed.player_id == guest.player_id
        created = await tournaments.CreateTournament(create,
                                                     metadata=session_bearer(renewed.tokens))
        assert created.tournament.host_id == guest.player_id


async def test_tables_and_tournaments_show_the_name_the_token_carries(
        accounts: accounts_pb2_grpc.AccountsServiceStub, channel: grpc.aio.Channel) -> None:
    guest = await accounts.SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
        device_id="naming-phone-1", display_name="Laleh"))
    lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
    table = (await lobby.CreateTable(lobby_pb2.CreateTableRequest(
        settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)),
        metadata=session_bearer(guest.tokens))).table
    assert table.seats[0].display_name == "Laleh"
    # A new name reaches the tables with the next tokens.
    await accounts.UpdateProfile(accounts_pb2.UpdateProfileRequest(display_name="Laleh N."),
                                 metadata=session_bearer(guest.tokens))
    renewed = await accounts.Refresh(accounts_pb2.RefreshRequest(
        refresh_token=guest.tokens.refresh_token))
    await lobby.LeaveTable(lobby_pb2.LeaveTableRequest(table_id=table.table_id),
                           metadata=session_bearer(renewed.tokens))
    other = (await lobby.CreateTable(lobby_pb2.CreateTableRequest(
        settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)),
        metadata=session_bearer(renewed.tokens))).table
    assert other.seats[0].display_name == "Laleh N."
    tournaments = tournament_pb2_grpc.TournamentServiceStub(channel)
    created = await tournaments.CreateTournament(tournament_pb2.CreateTournamentRequest(
        settings=tournament_pb2.TournamentSettings(
            name="names", game_type=common_pb2.GAME_TYPE_HOKM, players_per_table=2,
            rounds=1)), metadata=session_bearer(renewed.tokens))
    entered = await tournaments.RegisterPlayer(tournament_pb2.RegisterPlayerRequest(
        tournament_id=created.tournament.tournament_id), metadata=session_bearer(renewed.tokens))
    assert entered.entrant.display_name == "Laleh N."
