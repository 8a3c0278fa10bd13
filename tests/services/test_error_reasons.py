"""Every error reason the API can send is an ``ErrorReason`` value (protos/dast/v1/errors.proto),
and the client sees it: each one is triggered through the API and read back from
``google.rpc.ErrorInfo`` (domain ``dast.dev``, reason the value's name).

Three checks:

- the enum and the code agree: every code of every reason enum the engines and services
  raise has a value, no value is left over, and no reason enum (a ``StrEnum`` named ``…Code``
  or ``…Reason``) exists outside :data:`scripts/reason_tables.py` ``SOURCES``;
- a table of triggers (:data:`TRIGGERS`): one real call per reason against a running stack
  (lobby, game and tournament services, in-memory store), the client reading the reason back
  (and, for the tournaments' reasons, the status code the client guide gives it). Faults that
  no request can cause (the store failing, a writer winning every race, the game service
  unreachable) are injected at the store or the network, never in the code under test.
  Hand's rule codes are reached from logs whose deals are chosen (the store holds a log
  whose deal gives a seat exactly the cards of the case; the engine makes every event after
  the deal, as in play);
- the table covers every reason but :data:`UNREACHABLE`, each of which says why no valid
  log or request reaches it (the engine's own tests cover those codes; the tournament
  engine's are raised here by a direct engine call each, :data:`ENGINE_REFUSALS`).
"""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib.util
import json
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import grpc
import pytest
import sqlalchemy.exc

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    chat_pb2,
    chat_pb2_grpc,
    common_pb2,
    errors_pb2,
    game_pb2,
    game_pb2_grpc,
    hand_pb2,
    hokm_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    log_pb2,
    moderation_pb2,
    moderation_pb2_grpc,
    reports_pb2,
    reports_pb2_grpc,
    stats_pb2,
    stats_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from engine import hand
from engine import tournament as tournament_engine
from engine.core.cards import parse_card
from engine.core.chain import chain_log
from engine.core.errors import InvalidCommand, RuleViolation
from engine.core.fairness import commit
from engine.hand.cards import parse_hand_cards
from engine.hand.codec import hand_command, hand_event
from engine.hand.rules import resolve_rules
from engine.hokm.sim import play_match
from engine.tournament.decide import MAX_RATING
from engine.tournament.model import MAX_ROUNDS
from services.chat.talk_log import TalkUnavailable
from services.game.repository import GameRepository
from services.lobby.service import GrpcGameStarter
from services.lobby.store import StaleTable
from services.platform.auth import Role
from services.platform.errors import DOMAIN, error_info_of, reason_of
from services.platform.limits import CallerLimits
from services.platform.store import ConcurrencyConflict
from services.tournament.policy import DEFAULT_OPEN_PER_PLAYER, CreationPolicy, Creators
from services.tournament.store import ConcurrencyConflict as TournamentConflict
from services.tournament.tournaments import MAX_ATTEMPTS, Tournaments
from tests.e2e.helpers import stack
from tests.support.idp import LocalIdp, rsa_key
from tests.support.tokens import token

pytestmark = pytest.mark.timeout(120)
ROOT: Final = Path(__file__).resolve().parents[2]
SEED: Final = bytes(range(32))
LIMITS: Final = CallerLimits(streams_per_player=2, calls_per_second=50.0, call_burst=100,
                             sign_ins_per_minute_per_device=1_000,
                             sign_ins_per_minute_per_address=1_000,
                             spectators_per_game=2, streams_per_process=40,
                             spectator_share=0.25, address_share=0.25,
                             calls_in_flight=100_000, trusted_proxies=("127.0.0.1/32",))
"""A person's call rate (so that a flood is refused) and two streams per player; two
spectators a match, two an address and ten in the process (the clients name their address
in ``x-forwarded-for``, believed from loopback)."""


def _reason_tables() -> ModuleType:
    path = ROOT / "scripts" / "reason_tables.py"
    spec = importlib.util.spec_from_file_location("reason_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TABLES: Final = _reason_tables()
SOURCE_ENUMS: Final = {source.enum.__name__: source.enum for source in TABLES.SOURCES}
OUTSIDE_THE_CODE: Final = {"ERROR_REASON_UNSPECIFIED", "ERROR_REASON_UNLISTED"}


def _wire(code: str) -> str:
    return f"ERROR_REASON_{code.upper()}"


# ---- the enum and the code agree ---------------------------------------------------------

def test_every_reason_of_the_code_has_an_error_reason_value_and_no_value_is_left_over() -> None:
    reasons = TABLES.all_reasons()
    values = set(errors_pb2.ErrorReason.keys())
    assert TABLES.unlisted_reasons() == set()
    assert {_wire(reason) for reason in reasons} == values - OUTSIDE_THE_CODE
    # Numbers never move: the first of each group is where errors.proto says.
    assert errors_pb2.ERROR_REASON_GAME_NOT_FOUND == 1
    assert errors_pb2.ERROR_REASON_UNLISTED == 600


@functools.cache
def _modules() -> tuple[tuple[Path, ast.Module], ...]:
    """Every module of engine/ and services/, parsed once for the scans below."""
    return tuple((path, ast.parse(path.read_text(encoding="utf-8")))
                 for folder in ("engine", "services") for path in (ROOT / folder).rglob("*.py"))


def _reason_enums(tree: ast.AST) -> Iterator[str]:
    """The reason enums a module defines: ``StrEnum`` classes named ``…Code``/``…Reason``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name.endswith(("Code", "Reason")) and any(
            isinstance(base, ast.Name) and base.id == "StrEnum" for base in node.bases
        ):
            yield node.name


NOT_ERROR_REASONS: Final = {
    "AuditCode": "the findings of a tournament log's audit, sent in a report, never as an "
                 "ErrorInfo reason",
}


def test_every_reason_enum_of_the_code_is_a_source_of_the_tables() -> None:
    defined = {name for _, tree in _modules() for name in _reason_enums(tree)}
    assert {"Reason", "LobbyReason", "Code", "HokmCode", "HandCode", "ControlCode"} <= defined
    missing = defined - set(SOURCE_ENUMS) - set(NOT_ERROR_REASONS)
    assert missing == set(), "add the enum to scripts/reason_tables.py"


def _reason_argument(call: ast.Call) -> ast.expr | None:
    """The reason argument of a refusal: ``ServiceError(code, reason, …)`` or
    ``map_exception(kind, code, reason)``."""
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
    position = {"ServiceError": 1, "map_exception": 2}.get(name)
    if position is None or len(call.args) <= position:
        return None
    return call.args[position]


def test_no_service_refuses_with_a_reason_outside_the_enums() -> None:
    """A reason spelled as a bare string bypasses the enums, their guidance and this test."""
    reasons = TABLES.all_reasons()
    loose = set()
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                argument = _reason_argument(node)
                if isinstance(argument, ast.Constant) and argument.value not in reasons:
                    loose.add(f"{path.relative_to(ROOT)}:{node.lineno}: {argument.value!r}")
    assert loose == set(), "use a member of a reason enum of scripts/reason_tables.py"


def test_every_reason_the_code_names_is_a_member_of_its_enum() -> None:
    """``Reason.X``, ``HokmCode.X``… anywhere in engine/ and services/ name real members
    (a typo would be an AttributeError only when that refusal happens)."""
    named = 0
    for path, tree in _modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in SOURCE_ENUMS and node.attr.isupper()):
                assert node.attr in SOURCE_ENUMS[node.value.id].__members__, (
                    f"{path}: {node.value.id}.{node.attr}")
                named += 1
    assert named > 100


# ---- the calls ---------------------------------------------------------------------------

@dataclass
class Api:
    """A running stack and the callers a trigger needs."""

    run: Any
    channel: grpc.aio.Channel
    monkeypatch: pytest.MonkeyPatch
    lobby: lobby_pb2_grpc.LobbyServiceStub = field(init=False)
    game: game_pb2_grpc.GameServiceStub = field(init=False)
    tournament: tournament_pb2_grpc.TournamentServiceStub = field(init=False)
    _games: int = 0
    _commands: int = 0

    def __post_init__(self) -> None:
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self.game = game_pb2_grpc.GameServiceStub(self.channel)
        self.tournament = tournament_pb2_grpc.TournamentServiceStub(self.channel)

    @staticmethod
    def auth(player_id: str, role: Role = Role.PLAYER, **mint: Any) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {token(player_id, role, **mint)}"),)

    @property
    def service(self) -> tuple[tuple[str, str]]:
        return self.auth("lobby", Role.SERVICE)

    def game_id(self) -> str:
        self._games += 1
        return f"reasons-{self._games}"

    async def hokm_game(self, seats: int = 4, **create: Any) -> str:
        """A new Hokm match of p0… (``create``: more CreateGameRequest fields)."""
        variant = {4: 0, 3: 2, 2: 3}[seats]
        reply = await self.game.CreateGame(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, game_id=self.game_id(),
            hokm=hokm_pb2.HokmRules(variant=variant),  # type: ignore[arg-type]
            players=[common_pb2.Player(player_id=f"p{s}") for s in range(seats)], **create,
        ), metadata=self.service)
        return str(reply.game_id)

    async def view(self, game_id: str, seat: int) -> hokm_pb2.HokmView:
        reply = await self.game.GetView(game_pb2.GetViewRequest(game_id=game_id, seat=seat),
                                        metadata=self.service)
        view: hokm_pb2.HokmView = reply.hokm
        return view

    async def act(self, game_id: str, seat: int, **body: Any) -> Any:
        """SubmitCommand for ``seat`` with the service token (``hokm=`` or ``hand=``), under
        a command id of its own (a repeated one would answer the first command's result)."""
        self._commands += 1
        request = game_pb2.SubmitCommandRequest(
            game_id=game_id, command_id=f"command-{self._commands}", seat=seat, **body)
        return await self.game.SubmitCommand(request, metadata=self.service)

    async def hokm_declared(self, seats: int = 4) -> tuple[str, hokm_pb2.HokmView]:
        """A Hokm match whose hakem declared hearts; the hakem's view after it."""
        game_id = await self.hokm_game(seats)
        hakem = (await self.view(game_id, 0)).hakem
        await self.act(game_id, hakem, hokm=hokm_pb2.HokmCommand(
            declare_trump=hokm_pb2.DeclareTrump(suit=common_pb2.SUIT_HEARTS)))
        return game_id, await self.view(game_id, hakem)

    def stored(self, game_type: int, events: list[log_pb2.Event]) -> str:
        """A game whose log is ``events`` (written to the store, as the service would)."""
        game_id = self.game_id()
        self.run.store.create_game(game_id, game_type, chain_log(events))
        return game_id

    async def table(self, player: str, **settings: Any) -> lobby_pb2.Table:
        reply = await self.lobby.CreateTable(lobby_pb2.CreateTableRequest(
            settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                             hokm=hokm_pb2.HokmRules(
                                                 variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS),
                                             **settings)), metadata=self.auth(player))
        table: lobby_pb2.Table = reply.table
        return table


Trigger = Callable[[Api], Awaitable[object]]
TRIGGERS: dict[str, Trigger] = {}


def trigger(reason: str) -> Callable[[Trigger], Trigger]:
    def register(function: Trigger) -> Trigger:
        assert reason not in TRIGGERS, reason
        TRIGGERS[reason] = function
        return function
    return register


# ---- every service ----

@trigger("game_not_found")
async def _game_not_found(api: Api) -> object:
    return await api.game.GetView(game_pb2.GetViewRequest(game_id="no-such-game"),
                                  metadata=api.service)


@trigger("game_exists")
async def _game_exists(api: Api) -> object:
    game_id = await api.hokm_game()
    return await api.game.CreateGame(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, game_id=game_id,
        players=[common_pb2.Player(player_id=f"p{s}") for s in range(4)]), metadata=api.service)


@trigger("stale_expected_seq")
async def _stale(api: Api) -> object:
    game_id, view = await api.hokm_declared()
    request = game_pb2.SubmitCommandRequest(
        game_id=game_id, command_id="stale", seat=view.seat, expected_seq=1,
        hokm=hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=view.hand[0])))
    return await api.game.SubmitCommand(request, metadata=api.service)


@trigger("concurrent_command")
async def _concurrent(api: Api) -> object:
    game_id, view = await api.hokm_declared()

    async def another_writer_won(*_args: Any, **_kwargs: Any) -> Any:
        raise ConcurrencyConflict("another writer took the seq")

    # The store's answer when another replica appended first, every time.
    api.monkeypatch.setattr(GameRepository, "append", another_writer_won)
    return await api.act(game_id, view.seat, hokm=hokm_pb2.HokmCommand(
        play_card=hokm_pb2.PlayCard(card=view.hand[0])))


@trigger("not_your_seat")
async def _not_your_seat(api: Api) -> object:
    game_id = await api.hokm_game()
    return await api.game.GetView(game_pb2.GetViewRequest(game_id=game_id, seat=1),
                                  metadata=api.auth("p0"))


@trigger("not_seated")
async def _not_seated(api: Api) -> object:
    game_id = await api.hokm_game()
    request = game_pb2.SubmitCommandRequest(
        game_id=game_id, command_id="x",
        hokm=hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=0)))
    return await api.game.SubmitCommand(request, metadata=api.auth("stranger"))


@trigger("role_required")
async def _role_required(api: Api) -> object:
    return await api.game.CreateGame(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM), metadata=api.auth("p0"))


@trigger("game_not_over")
async def _game_not_over(api: Api) -> object:
    game_id = await api.hokm_game()
    return await api.game.ExportLog(game_pb2.ExportLogRequest(game_id=game_id),
                                    metadata=api.auth("p0"))


@trigger("spectators_not_allowed")
async def _no_spectators(api: Api) -> object:
    game_id = await api.hokm_game(spectators_allowed=False)
    return await api.game.GetView(game_pb2.GetViewRequest(game_id=game_id),
                                  metadata=api.auth("stranger"))


@trigger("invalid_request")
async def _invalid_request(api: Api) -> object:
    game_id = await api.hokm_game()
    request = game_pb2.SubmitCommandRequest(
        game_id=game_id, command_id="", seat=0,
        hokm=hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=0)))
    return await api.game.SubmitCommand(request, metadata=api.service)


@trigger("unknown_game_type")
async def _unknown_game_type(api: Api) -> object:
    return await api.game.CreateGame(game_pb2.CreateGameRequest(game_type=77),  # type: ignore[arg-type]
                                     metadata=api.service)


@trigger("malformed_request")
async def _malformed_request(api: Api) -> object:
    raw = api.channel.unary_unary("/dast.v1.GameService/GetView")
    return await raw(b"\xff\xff\xff", metadata=api.service)


@trigger("invalid_display_name")
async def _invalid_display_name(api: Api) -> object:
    return await api.lobby.SignInGuest(lobby_pb2.SignInGuestRequest(
        device_id="device-reasons-name", display_name="\u200b\u200b"))


@trigger("unknown_enum_value")
async def _unknown_enum_value(api: Api) -> object:
    return await api.lobby.CreateTable(lobby_pb2.CreateTableRequest(
        settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                         bot_level=77)),  # type: ignore[arg-type]
        metadata=api.auth("host"))


@trigger("unauthenticated")
async def _unauthenticated(api: Api) -> object:
    return await api.game.GetView(game_pb2.GetViewRequest(game_id="g"))


@trigger("token_expired")
async def _token_expired(api: Api) -> object:
    return await api.game.GetView(game_pb2.GetViewRequest(game_id="g"),
                                  metadata=api.auth("p0", ttl_seconds=-60))


@trigger("token_invalid")
async def _token_invalid(api: Api) -> object:
    return await api.game.GetView(game_pb2.GetViewRequest(game_id="g"),
                                  metadata=(("authorization", "Bearer not-a-token"),))


@trigger("rate_limited")
async def _rate_limited(api: Api) -> object:
    request = game_pb2.GetViewRequest(game_id="no-such-game")
    metadata = api.auth("flooder")
    answers = await asyncio.gather(*(api.game.GetView(request, metadata=metadata)
                                     for _ in range(LIMITS.call_burst * 3)),
                                   return_exceptions=True)
    for answer in answers:
        if isinstance(answer, grpc.aio.AioRpcError) and (
                answer.code() == grpc.StatusCode.RESOURCE_EXHAUSTED):
            raise answer
    raise AssertionError("the flood was never refused")


@trigger("too_many_streams")
async def _too_many_streams(api: Api) -> object:
    game_id = await api.hokm_game()
    calls = []
    try:
        for _ in range(LIMITS.streams_per_player + 1):
            call = api.game.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                      metadata=api.auth("p0"))
            calls.append(call)
            await call.read()
    finally:
        for call in calls:
            call.cancel()
    raise AssertionError("a stream over the limit was opened")


async def _spectators(api: Api, game_id: str, address: str, count: int) -> list[Any]:
    """``count`` spectators' streams of ``game_id`` from ``address``, each open (its first
    event read) before the next; the caller cancels them."""
    calls: list[Any] = []
    try:
        for number in range(count):
            call = api.game.Subscribe(game_pb2.SubscribeRequest(game_id=game_id), metadata=(
                *api.auth(f"watcher-{game_id}-{number}"), ("x-forwarded-for", address)))
            calls.append(call)
            await call.read()
    except BaseException:
        for call in calls:
            call.cancel()
        raise
    return calls


@trigger("too_many_spectators")
async def _too_many_spectators(api: Api) -> object:
    game_id = await api.hokm_game()
    calls = await _spectators(api, game_id, "192.0.2.1", LIMITS.spectators_per_game)
    try:
        await _spectators(api, game_id, "192.0.2.2", 1)
    finally:
        for call in calls:
            call.cancel()
    raise AssertionError("a spectator over the match's cap was admitted")


async def _watch_new_matches(api: Api, addresses: list[str], refused: str) -> object:
    """One spectator's stream of a new match from each of ``addresses`` (each match under
    its cap), the last of which should be ``refused``."""
    calls = []
    try:
        for address in addresses:
            calls += await _spectators(api, await api.hokm_game(), address, 1)
    finally:
        for call in calls:
            call.cancel()
    raise AssertionError(f"{refused} was admitted")


@trigger("address_limited")
async def _address_limited(api: Api) -> object:
    return await _watch_new_matches(api, ["192.0.2.3"] * (LIMITS.spectators_per_address + 1),
                                    "an address over its share of spectators")


@trigger("server_busy")
async def _server_busy(api: Api) -> object:
    return await _watch_new_matches(
        api, [f"192.0.2.{10 + n}" for n in range(LIMITS.spectator_streams + 1)],
        "a spectator over the process's share")


@trigger("internal")
async def _internal(api: Api) -> object:
    def store_failure(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("a fault of the store's code")

    api.monkeypatch.setattr(api.run.store, "load", store_failure)
    return await api.game.GetView(game_pb2.GetViewRequest(game_id="not-cached-yet"),
                                  metadata=api.service)


@trigger("store_unavailable")
async def _store_unavailable(api: Api) -> object:
    def database_gone(*_args: Any, **_kwargs: Any) -> Any:
        raise sqlalchemy.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError())

    api.monkeypatch.setattr(api.run.store, "load", database_gone)
    return await api.game.GetView(game_pb2.GetViewRequest(game_id="not-cached-either"),
                                  metadata=api.service)


# ---- the lobby ----

@trigger("table_not_found")
async def _table_not_found(api: Api) -> object:
    return await api.lobby.GetTable(lobby_pb2.GetTableRequest(table_id="no-such-table"),
                                    metadata=api.auth("host"))


@trigger("table_not_waiting")
async def _table_not_waiting(api: Api) -> object:
    table = await api.table("host")
    await api.lobby.StartGame(lobby_pb2.StartGameRequest(table_id=table.table_id),
                              metadata=api.auth("host"))
    return await api.lobby.ChooseSeat(lobby_pb2.ChooseSeatRequest(table_id=table.table_id,
                                                                  seat=1),
                                      metadata=api.auth("host"))


@trigger("table_full")
async def _table_full(api: Api) -> object:
    table = await api.table("host")
    await api.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table.table_id),
                              metadata=api.auth("friend"))
    return await api.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table.table_id),
                                     metadata=api.auth("third"))


@trigger("seat_taken")
async def _seat_taken(api: Api) -> object:
    table = await api.table("host")
    return await api.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table.table_id,
                                                                seat=0),
                                     metadata=api.auth("friend"))


@trigger("not_host")
async def _not_host(api: Api) -> object:
    table = await api.table("host")
    await api.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table.table_id),
                              metadata=api.auth("friend"))
    return await api.lobby.StartGame(lobby_pb2.StartGameRequest(table_id=table.table_id),
                                     metadata=api.auth("friend"))


@trigger("invite_required")
async def _invite_required(api: Api) -> object:
    table = await api.table("host", private=True)
    return await api.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table.table_id),
                                     metadata=api.auth("friend"))


@trigger("concurrent_change")
async def _concurrent_change(api: Api) -> object:
    table = await api.table("host")

    def another_writer_won(table: lobby_pb2.Table, *_args: Any) -> Any:
        raise StaleTable(f"table {table.table_id} changed")

    api.monkeypatch.setattr(api.run.stack.lobby_store, "save", another_writer_won)
    return await api.lobby.JoinTable(lobby_pb2.JoinTableRequest(table_id=table.table_id),
                                     metadata=api.auth("friend"))


@trigger("invalid_settings")
async def _invalid_settings(api: Api) -> object:
    return await api.table("host", target_score=4)


@trigger("device_sign_in_retired")
async def _device_sign_in_retired(api: Api) -> object:
    # The test stack keeps the lobby's device sign-in on for its Guest helper; a server
    # left on its defaults has it off.
    assert api.run.stack.lobby is not None
    api.monkeypatch.setattr(api.run.stack.lobby.service, "device_sign_in", False)
    return await api.lobby.SignInGuest(lobby_pb2.SignInGuestRequest(
        device_id="device-reasons-retired"))


@trigger("game_service_unavailable")
async def _game_service_unavailable(api: Api) -> object:
    table = await api.table("host")
    nowhere = grpc.aio.insecure_channel("127.0.0.1:9")  # discard port: nobody answers
    api.monkeypatch.setattr(GrpcGameStarter, "_stub",
                            lambda _self: game_pb2_grpc.GameServiceStub(nowhere))
    try:
        return await api.lobby.StartGame(lobby_pb2.StartGameRequest(table_id=table.table_id),
                                         metadata=api.auth("host"))
    finally:
        await nowhere.close()


# ---- table talk and reports ----

def _chat(api: Api) -> chat_pb2_grpc.ChatServiceStub:
    return chat_pb2_grpc.ChatServiceStub(api.channel)


async def _say(api: Api, player: str, table_id: str, text: str = "", phrase: str = "") -> Any:
    request = chat_pb2.SendChatRequest(table_id=table_id)
    if phrase:
        request.phrase_id = phrase
    else:
        request.text = text
    return await _chat(api).SendChat(request, metadata=api.auth(player))


@trigger("not_at_table")
async def _not_at_table(api: Api) -> object:
    table = await api.table("talk-host-1")
    return await _say(api, "talk-stranger", table.table_id, "hello")


async def _say_at_own_table(api: Api, host: str, text: str = "", phrase: str = "",
                            **settings: Any) -> object:
    """``host`` opens a table of ``settings`` and says ``text`` (or ``phrase``) there."""
    table = await api.table(host, **settings)
    return await _say(api, host, table.table_id, text, phrase)


@trigger("chat_off")
async def _chat_off(api: Api) -> object:
    return await _say_at_own_table(api, "talk-host-2", phrase="hello",
                                   chat=lobby_pb2.CHAT_MODE_OFF)


@trigger("chat_phrases_only")
async def _chat_phrases_only(api: Api) -> object:
    return await _say_at_own_table(api, "talk-host-3", "free text",
                                   chat=lobby_pb2.CHAT_MODE_PHRASES)


@trigger("chat_too_long")
async def _chat_too_long(api: Api) -> object:
    return await _say_at_own_table(api, "talk-host-4", "x" * 201)


@trigger("chat_text_invalid")
async def _chat_text_invalid(api: Api) -> object:
    return await _say_at_own_table(api, "talk-host-5", "\u202e\u200b\u2066")


@trigger("unknown_phrase")
async def _unknown_phrase(api: Api) -> object:
    return await _say_at_own_table(api, "talk-host-6", phrase="no_such_phrase")


@trigger("chat_rate_limited")
async def _chat_rate_limited(api: Api) -> object:
    table = await api.table("talk-host-7")
    for count in range(6):  # five in ten seconds, then refused
        reply = await _say(api, "talk-host-7", table.table_id, f"message {count}")
    return reply


@trigger("cannot_mute_self")
async def _cannot_mute_self(api: Api) -> object:
    return await _chat(api).MutePlayer(chat_pb2.MutePlayerRequest(
        player_id="talk-host-8", muted=True), metadata=api.auth("talk-host-8"))


@trigger("chat_unavailable")
async def _chat_unavailable(api: Api) -> object:
    table = await api.table("talk-host-9")

    async def nats_down(message: chat_pb2.ChatMessage) -> chat_pb2.ChatMessage:
        raise TalkUnavailable("NATS did not take the message")  # as NatsTalkLog raises

    api.monkeypatch.setattr(api.run.stack.talk, "append", nats_down)
    return await _say(api, "talk-host-9", table.table_id, "anyone there?")


def _reports(api: Api) -> reports_pb2_grpc.ReportServiceStub:
    return reports_pb2_grpc.ReportServiceStub(api.channel)


async def _report_at(api: Api, reporter: str, reported: str) -> object:
    """``reporter`` reports ``reported`` of a match at a table ``report-host`` hosts."""
    table = await api.table("report-host")
    started = await api.lobby.StartGame(lobby_pb2.StartGameRequest(table_id=table.table_id),
                                        metadata=api.auth("report-host"))
    return await _reports(api).ReportPlayer(reports_pb2.ReportPlayerRequest(
        game_id=started.table.game_id, player_id=reported,
        category=reports_pb2.REPORT_CATEGORY_CHEATING), metadata=api.auth(reporter))


@trigger("not_in_game")
async def _not_in_game(api: Api) -> object:
    return await _report_at(api, "report-stranger", "report-host")


@trigger("cannot_report_self")
async def _cannot_report_self(api: Api) -> object:
    return await _report_at(api, "report-host", "report-host")


@trigger("report_not_found")
async def _report_not_found(api: Api) -> object:
    return await _reports(api).GetReport(reports_pb2.GetReportRequest(report_id=404),
                                         metadata=_OPERATOR)


# ---- statistics ----

@trigger("player_not_found")
async def _player_not_found(api: Api) -> object:
    stats = stats_pb2_grpc.StatsServiceStub(api.channel)
    return await stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(player_id="nobody-yet"),
                                      metadata=api.auth("p0"))


# ---- accounts ----

def _accounts(api: Api) -> accounts_pb2_grpc.AccountsServiceStub:
    return accounts_pb2_grpc.AccountsServiceStub(api.channel)


@trigger("device_secret_invalid")
async def _device_secret_invalid(api: Api) -> object:
    request = accounts_pb2.AccountsServiceSignInGuestRequest(device_id="reasons-device-1")
    await _accounts(api).SignInGuest(request)
    return await _accounts(api).SignInGuest(request)  # again, without the secret


@trigger("refresh_token_invalid")
async def _refresh_token_invalid(api: Api) -> object:
    return await _accounts(api).Refresh(accounts_pb2.RefreshRequest(
        refresh_token="no-such-refresh-token"))


@trigger("refresh_token_reused")
async def _refresh_token_reused(api: Api) -> object:
    signed_in = await _accounts(api).SignInGuest(
        accounts_pb2.AccountsServiceSignInGuestRequest(device_id="reasons-device-2"))
    spent = accounts_pb2.RefreshRequest(refresh_token=signed_in.tokens.refresh_token)
    await _accounts(api).Refresh(spent)
    return await _accounts(api).Refresh(spent)


@trigger("guest_already_moved")
async def _guest_already_moved(api: Api) -> object:
    lobby_guest = await api.lobby.SignInGuest(lobby_pb2.SignInGuestRequest(
        device_id="reasons-device-3"))
    bearer = (("authorization", f"Bearer {lobby_guest.token}"),)
    for device_id in ("reasons-device-4", "reasons-device-5"):  # the second one is refused
        reply = await _accounts(api).SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
            device_id=device_id), metadata=bearer)
    return reply


@trigger("stream_backlog")
async def _stream_backlog(api: Api) -> object:
    # A client that sends and never reads, on a channel whose receive window stays 64 kB:
    # the server's answers (renewals acknowledged) fill the window, then its queue.
    game_id = await api.hokm_game()
    fresh = token("p0")
    renewal = game_pb2.PlayRequest(renewal=game_pb2.PlayRenewal(access_token=fresh))

    def requests() -> Iterator[game_pb2.PlayRequest]:
        yield game_pb2.PlayRequest(open=game_pb2.PlayOpen(game_id=game_id))
        for _ in range(5_000):  # some 2,500 acknowledgements fill the window
            yield renewal

    async with grpc.aio.insecure_channel(
            api.run.address, options=[("grpc.http2.bdp_probe", 0)]) as channel:
        call = game_pb2_grpc.GameServiceStub(channel).Play(
            requests(), metadata=(("authorization", f"Bearer {fresh}"),))
        await asyncio.sleep(3)  # read nothing while the server takes the requests
        while await call.read() is not grpc.aio.EOF:
            pass  # then what the window held, and the status the stream ended with
    raise AssertionError("a client that never read kept its stream")


@trigger("session_revoked")
async def _session_revoked(api: Api) -> object:
    signed_in = await _accounts(api).SignInGuest(
        accounts_pb2.AccountsServiceSignInGuestRequest(device_id="reasons-device-7"))
    bearer = (("authorization", f"Bearer {signed_in.tokens.access_token}"),)
    await _accounts(api).SignOut(accounts_pb2.SignOutRequest(), metadata=bearer)
    return await _accounts(api).ListIdentities(accounts_pb2.ListIdentitiesRequest(),
                                               metadata=bearer)


def _moderation(api: Api) -> moderation_pb2_grpc.ModerationServiceStub:
    return moderation_pb2_grpc.ModerationServiceStub(api.channel)


_OPERATOR: Final = (("authorization", f"Bearer {token('reasons-operator', Role.ADMIN)}"),)


@trigger("player_banned")
async def _player_banned(api: Api) -> object:
    signed_in = await _accounts(api).SignInGuest(
        accounts_pb2.AccountsServiceSignInGuestRequest(device_id="reasons-device-8"))
    await _moderation(api).BanPlayer(moderation_pb2.BanPlayerRequest(
        player_id=signed_in.player_id, reason="reasons test"), metadata=_OPERATOR)
    return await _accounts(api).SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
        device_id="reasons-device-8", device_secret=signed_in.device_secret))


@trigger("account_deleted")
async def _account_deleted(api: Api) -> object:
    signed_in = await _accounts(api).SignInGuest(
        accounts_pb2.AccountsServiceSignInGuestRequest(device_id="reasons-device-9"))
    bearer = (("authorization", f"Bearer {signed_in.tokens.access_token}"),)
    await _accounts(api).DeleteAccount(accounts_pb2.DeleteAccountRequest(
        confirm_player_id=signed_in.player_id), metadata=bearer)
    return await _accounts(api).ListIdentities(accounts_pb2.ListIdentitiesRequest(),
                                               metadata=bearer)


@trigger("unknown_player")
async def _unknown_player(api: Api) -> object:
    return await _moderation(api).LiftBan(moderation_pb2.LiftBanRequest(
        player_id="g-0000000000000000"), metadata=_OPERATOR)


@trigger("no_session")
async def _no_session(api: Api) -> object:
    return await _accounts(api).SignOut(accounts_pb2.SignOutRequest(), metadata=api.auth("p0"))


IDP: Final = LocalIdp([rsa_key("reasons-r1")])
"""The identity provider the stack trusts as ``reasons`` (started by the test)."""
DOWN_IDP: Final = LocalIdp([rsa_key("reasons-d1")], issuer="https://down.example.test")
"""A provider whose keys cannot be fetched (``down``: its JWKS endpoint answers 503)."""


def _oidc_providers() -> str:
    DOWN_IDP.mode = "error"
    return json.dumps([IDP.provider("reasons").model_dump(mode="json"),
                       DOWN_IDP.provider("down").model_dump(mode="json")])


async def _id_token_sign_in(api: Api, id_token: str, provider: str = "reasons") -> Any:
    return await _accounts(api).SignInWithIdToken(accounts_pb2.SignInWithIdTokenRequest(
        provider=provider, id_token=id_token))


async def _linked(api: Api, subject: str) -> tuple[tuple[str, str]]:
    """The bearer of a new player signed in with the ``reasons`` identity ``subject``."""
    reply = await _id_token_sign_in(api, IDP.mint("reasons-r1", sub=subject))
    return (("authorization", f"Bearer {reply.tokens.access_token}"),)


@trigger("identity_linked_elsewhere")
async def _identity_linked_elsewhere(api: Api) -> object:
    await _linked(api, "reasons-owner")
    guest = await _accounts(api).SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
        device_id="reasons-device-6"))
    return await _accounts(api).LinkIdentity(accounts_pb2.LinkIdentityRequest(
        id_token=IDP.mint("reasons-r1", sub="reasons-owner")),
        metadata=(("authorization", f"Bearer {guest.tokens.access_token}"),))


@trigger("provider_already_linked")
async def _provider_already_linked(api: Api) -> object:
    bearer = await _linked(api, "reasons-first")
    return await _accounts(api).LinkIdentity(accounts_pb2.LinkIdentityRequest(
        id_token=IDP.mint("reasons-r1", sub="reasons-second")), metadata=bearer)


@trigger("identity_not_linked")
async def _identity_not_linked(api: Api) -> object:
    return await _accounts(api).UnlinkIdentity(accounts_pb2.UnlinkIdentityRequest(
        provider="reasons", subject="someone-else"), metadata=await _linked(api, "reasons-3"))


@trigger("last_way_in")
async def _last_way_in(api: Api) -> object:
    return await _accounts(api).UnlinkIdentity(accounts_pb2.UnlinkIdentityRequest(
        provider="reasons", subject="reasons-4"), metadata=await _linked(api, "reasons-4"))


async def _update_profile(api: Api, request: accounts_pb2.UpdateProfileRequest) -> object:
    """UpdateProfile by a new guest of the accounts service."""
    guest = await _accounts(api).SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
        device_id=f"reasons-profile-{request.avatar_id or request.locale}"))
    return await _accounts(api).UpdateProfile(request, metadata=(
        ("authorization", f"Bearer {guest.tokens.access_token}"),))


@trigger("account_not_found")
async def _account_not_found(api: Api) -> object:
    return await _accounts(api).GetProfile(accounts_pb2.GetProfileRequest(
        player_id="a-0000000000000000"), metadata=api.auth("p0"))


@trigger("invalid_avatar_id")
async def _invalid_avatar_id(api: Api) -> object:
    return await _update_profile(api, accounts_pb2.UpdateProfileRequest(avatar_id="Cat"))


@trigger("invalid_locale")
async def _invalid_locale(api: Api) -> object:
    return await _update_profile(api, accounts_pb2.UpdateProfileRequest(locale="fa_IR"))


@trigger("id_token_invalid")
async def _id_token_invalid(api: Api) -> object:
    return await _id_token_sign_in(api, "not-a-jwt")


@trigger("id_token_expired")
async def _id_token_expired(api: Api) -> object:
    return await _id_token_sign_in(api, IDP.mint("reasons-r1", exp=1))


@trigger("id_token_not_yet_valid")
async def _id_token_not_yet_valid(api: Api) -> object:
    return await _id_token_sign_in(api, IDP.mint("reasons-r1", nbf=int(time.time()) + 3600))


@trigger("id_token_wrong_audience")
async def _id_token_wrong_audience(api: Api) -> object:
    return await _id_token_sign_in(api, IDP.mint("reasons-r1", aud="com.example.another"))


@trigger("id_token_wrong_issuer")
async def _id_token_wrong_issuer(api: Api) -> object:
    return await _id_token_sign_in(api, IDP.mint("reasons-r1", iss="https://elsewhere.test"))


@trigger("id_token_unknown_key")
async def _id_token_unknown_key(api: Api) -> object:
    return await _id_token_sign_in(api, IDP.mint("reasons-r1", headers={"kid": "no-such-kid"}))


@trigger("id_token_algorithm_refused")
async def _id_token_algorithm_refused(api: Api) -> object:
    return await _id_token_sign_in(api, IDP.forge_none(kid="reasons-r1"))


@trigger("identity_provider_unavailable")
async def _identity_provider_unavailable(api: Api) -> object:
    return await _id_token_sign_in(api, DOWN_IDP.mint("reasons-d1"), provider="down")


@trigger("unknown_identity_provider")
async def _unknown_identity_provider(api: Api) -> object:
    return await _id_token_sign_in(api, IDP.mint("reasons-r1"), provider="nobody")


# ---- every game's rules, through Hokm ----

def _play(card: int) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=card))


def _declare(suit: int) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=suit))  # type: ignore[arg-type]


@trigger("not_your_turn")
async def _not_your_turn(api: Api) -> object:
    game_id, view = await api.hokm_declared()
    other = (view.seat + 1) % 4
    return await api.act(game_id, other, hokm=_play((await api.view(game_id, other)).hand[0]))


@trigger("game_over")
async def _game_over(api: Api) -> object:
    events = play_match(hokm_pb2.HokmRules(target_score=1), SEED, ["greedy"] * 4, 1,
                        players=[common_pb2.Player(player_id=f"p{s}") for s in range(4)])
    game_id = api.stored(common_pb2.GAME_TYPE_HOKM, events)
    return await api.act(game_id, 0, hokm=_play(0))


@trigger("wrong_phase")
async def _wrong_phase(api: Api) -> object:
    game_id, view = await api.hokm_declared()
    return await api.act(game_id, view.seat, hokm=_declare(common_pb2.SUIT_SPADES))


@trigger("wrong_game")
async def _wrong_game(api: Api) -> object:
    game_id = await api.hokm_game()
    return await api.act(game_id, 0, hand=hand_pb2.HandCommand(
        draw_from_stock=hand_pb2.DrawFromStock()))


@trigger("malformed_command")
async def _malformed_command(api: Api) -> object:
    game_id = await api.hokm_game()
    return await api.act(game_id, 0, hokm=hokm_pb2.HokmCommand())


@trigger("invalid_card")
async def _invalid_card(api: Api) -> object:
    game_id, view = await api.hokm_declared()
    return await api.act(game_id, view.seat, hokm=_play(99))


@trigger("invalid_rules")
async def _invalid_rules(api: Api) -> object:
    return await api.game.CreateGame(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(target_score=0),
        players=[common_pb2.Player(player_id=f"p{s}") for s in range(4)]),
        metadata=api.service)


@trigger("invalid_players")
async def _invalid_players(api: Api) -> object:
    return await api.game.CreateGame(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM,
        players=[common_pb2.Player(player_id=f"p{s}") for s in range(5)]),
        metadata=api.service)


# ---- Hokm's rules ----

@trigger("not_hakem")
async def _not_hakem(api: Api) -> object:
    game_id = await api.hokm_game()
    hakem = (await api.view(game_id, 0)).hakem
    return await api.act(game_id, (hakem + 1) % 4, hokm=_declare(common_pb2.SUIT_HEARTS))


@trigger("trump_not_declared")
async def _trump_not_declared(api: Api) -> object:
    game_id = await api.hokm_game()
    view = await api.view(game_id, (await api.view(game_id, 0)).hakem)
    return await api.act(game_id, view.seat, hokm=_play(view.hand[0]))


@trigger("card_not_in_hand")
async def _card_not_in_hand(api: Api) -> object:
    game_id, view = await api.hokm_declared()
    missing = next(card for card in range(52) if card not in view.hand)
    return await api.act(game_id, view.seat, hokm=_play(missing))


@trigger("must_follow_suit")
async def _must_follow_suit(api: Api) -> object:
    game_id, view = await api.hokm_declared()
    follower = await api.view(game_id, (view.seat + 1) % 4)
    suits = {card // 13 for card in follower.hand}
    lead = next(card for card in view.hand if card // 13 in suits and len(suits) > 1)
    await api.act(game_id, view.seat, hokm=_play(lead))
    off_suit = next(card for card in follower.hand if card // 13 != lead // 13)
    return await api.act(game_id, follower.seat, hokm=_play(off_suit))


async def _set_aside_phase(api: Api) -> tuple[str, hokm_pb2.HokmView]:
    game_id, view = await api.hokm_declared(seats=3)
    assert view.phase == hokm_pb2.HOKM_PHASE_SET_ASIDE
    return game_id, view


def _set_aside(cards: list[int]) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(set_aside_cards=hokm_pb2.SetAsideCards(cards=cards))


@trigger("wrong_set_aside_count")
async def _wrong_set_aside_count(api: Api) -> object:
    game_id, view = await _set_aside_phase(api)
    return await api.act(game_id, view.seat, hokm=_set_aside(list(view.hand[:3])))


@trigger("duplicate_card")
async def _duplicate_card(api: Api) -> object:
    game_id, view = await _set_aside_phase(api)
    return await api.act(game_id, view.seat, hokm=_set_aside([view.hand[0]] * 4))


@trigger("no_such_pile")
async def _no_such_pile(api: Api) -> object:
    game_id = await api.hokm_game(seats=2)
    return await api.act(game_id, 0, hokm=hokm_pb2.HokmCommand(
        take_pile_card=hokm_pb2.TakePileCard(pile=5)))


@trigger("invalid_suit")
async def _invalid_suit(api: Api) -> object:
    game_id = await api.hokm_game()
    hakem = (await api.view(game_id, 0)).hakem
    return await api.act(game_id, hakem, hokm=_declare(common_pb2.SUIT_UNSPECIFIED))


# ---- seat control ----

@trigger("seat_is_a_bot")
async def _seat_is_a_bot(api: Api) -> object:
    reply = await api.game.CreateGame(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, game_id=api.game_id(),
        players=[common_pb2.Player(player_id=f"p{s}", is_bot=s == 3) for s in range(4)]),
        metadata=api.service)
    return await api.game.ControlSeat(game_pb2.ControlSeatRequest(
        game_id=reply.game_id, seat=3, bot=True, bot_level="basic"), metadata=api.service)


@trigger("bot_level_required")
async def _bot_level_required(api: Api) -> object:
    game_id = await api.hokm_game()
    return await api.game.ControlSeat(game_pb2.ControlSeatRequest(
        game_id=game_id, seat=1, bot=True), metadata=api.service)


# ---- Hand's rules, from chosen deals ----

@dataclass(frozen=True)
class HandCase:
    """Two players, dealer 0: seat 1 opens the round by discarding ``first_discard``, then
    seat 0 plays ``moves`` (the engine makes their events), then the API is sent ``command``
    for seat ``seat``."""

    hands: tuple[str, str]
    command: dict[str, Any]
    moves: tuple[dict[str, Any], ...] = ({"draw_from_stock": hand_pb2.DrawFromStock()},)
    stock: str = "4♦' 5♦' 6♦' 7♦' 8♦'"
    first_discard: str = "2♣'"
    seat: int = 0
    rules: hand_pb2.HandRules = field(default_factory=hand_pb2.HandRules)
    before_first_discard: bool = False


def _cards(text: str) -> list[int]:
    return parse_hand_cards(text)


def _spec(text: str, **jokers: str) -> hand_pb2.MeldSpec:
    faces = [hand_pb2.JokerFace(joker=_cards(name)[0], face=parse_card(face))
             for name, face in jokers.items()]
    return hand_pb2.MeldSpec(cards=_cards(text), jokers=faces)


def _lay(*specs: hand_pb2.MeldSpec) -> dict[str, Any]:
    return {"lay_melds": hand_pb2.LayMelds(melds=list(specs))}


FILLER: Final = " K♣' 3♥'"
"""Two cards beside each meld, so that no meld takes a seat's last card."""


def _meld_case(text: str, rules: hand_pb2.HandRules | None = None, **jokers: str) -> HandCase:
    return HandCase(hands=(text + FILLER, "2♣' 9♥'"), command=_lay(_spec(text, **jokers)),
                    rules=rules or hand_pb2.HandRules())


OPENING: Final = "K♠ K♥ K♦ Q♠ Q♥ Q♦"
"""Two sets worth 60: an opening (51 or more) in one LayMelds."""
OPEN: Final = _lay(_spec("K♠ K♥ K♦"), _spec("Q♠ Q♥ Q♦"))
DRAW: Final = {"draw_from_stock": hand_pb2.DrawFromStock()}
TAKE: Final = {"take_discard": hand_pb2.TakeDiscard()}

HAND_CASES: dict[str, HandCase] = {
    "meld_too_short": _meld_case("5♠ 6♠"),
    "duplicate_card": _meld_case("5♠ 5♠ 6♠ 7♠"),
    "duplicate_suit_in_set": _meld_case("7♠ 7♠' 7♥"),
    "set_mixed_ranks": _meld_case("7♠ 7♥ 8♣"),
    "set_too_large": _meld_case("7♠ 7♥ 7♣ 7♦ JK1", JK1="7♠"),
    "run_mixed_suits": _meld_case("7♠ 8♥ 9♠"),
    "run_has_gap": _meld_case("7♠ 8♠ 10♠"),
    "run_repeated_rank": _meld_case("7♠ 7♠' 8♠ 9♠"),
    "run_wraps": _meld_case("K♠ A♠ 2♠"),
    "ace_in_middle": _meld_case("A♠ 2♠ 3♠ 4♠ 5♠ 6♠ 7♠ 8♠ 9♠ 10♠ J♠ Q♠ K♠ A♠'"),
    "too_many_jokers": _meld_case("5♠ JK1 JK2 8♠", JK1="6♠", JK2="7♠"),
    "too_few_naturals": _meld_case("5♠ JK1 JK2", hand_pb2.HandRules(max_jokers_per_meld=2),
                                   JK1="6♠", JK2="7♠"),
    "joker_face_invalid": _meld_case("5♠ JK1 7♠", JK1="6♥"),
    "first_turn_discard_only": HandCase(hands=("7♠ 8♠", "2♣' 9♥'"), command=DRAW, seat=1,
                                        moves=(), before_first_discard=True),
    "must_draw_first": HandCase(hands=("7♠ 8♠", "2♣' 9♥'"), moves=(),
                                command={"discard": hand_pb2.Discard(card=_cards("7♠")[0])}),
    "already_drew": HandCase(hands=("7♠ 8♠", "2♣' 9♥'"), command=DRAW),
    "taken_discard_unusable": HandCase(hands=("7♠ 8♠ K♦", "2♣' 9♥'"), moves=(),
                                       command=TAKE),
    "must_use_taken_discard": HandCase(
        hands=(OPENING + " 7♠ 8♠ 4♣", "9♠ 9♥'"), first_discard="9♠", moves=(TAKE, OPEN),
        command={"discard": hand_pb2.Discard(card=_cards("4♣")[0])}),
    "opening_must_use_taken_discard": HandCase(
        hands=("7♠ 7♥ 7♦ 8♠ K♦ K♣ K♥ Q♠ Q♥ Q♦ 2♦", "9♠ 9♥'"), first_discard="9♠",
        moves=(TAKE,), command=_lay(_spec("7♠ 7♥ 7♦"), _spec("K♦ K♣ K♥"), _spec("Q♠ Q♥ Q♦"))),
    "card_not_in_hand": HandCase(hands=("7♠ 8♠", "2♣' 9♥'"),
                                 command={"discard": hand_pb2.Discard(card=_cards("A♦")[0])}),
    "cannot_meld_last_card": HandCase(hands=("K♠ K♥", "2♣' 9♥'"), stock="K♦ 5♦'",
                                      command=_lay(_spec("K♠ K♥ K♦"))),
    "opening_below_minimum": HandCase(hands=("2♠ 3♠ 4♠ 9♥", "2♣' 9♥'"),
                                      command=_lay(_spec("2♠ 3♠ 4♠"))),
    "opening_not_above_previous": HandCase(
        hands=(OPENING + " 4♣ 5♥", "J♠ J♥ J♦ 10♠ 10♥ 10♦ 2♣' 3♣' 6♣'"),
        moves=(DRAW, OPEN, {"discard": hand_pb2.Discard(card=_cards("4♣")[0])}, DRAW),
        rules=hand_pb2.HandRules(must_beat_previous=True), seat=1,
        command=_lay(_spec("J♠ J♥ J♦"), _spec("10♠ 10♥ 10♦"))),
    "not_opened": HandCase(hands=("7♠ 8♠ 9♥", "2♣' 9♥'"),
                           command={"lay_off": hand_pb2.LayOff(meld_id=0,
                                                               card=_cards("7♠")[0])}),
    "no_such_meld": HandCase(hands=(OPENING + " 7♠ 8♠", "2♣' 9♥'"), moves=(DRAW, OPEN),
                             command={"lay_off": hand_pb2.LayOff(meld_id=5,
                                                                 card=_cards("7♠")[0])}),
    "cannot_lay_off": HandCase(hands=(OPENING + " 7♠ 8♠", "2♣' 9♥'"), moves=(DRAW, OPEN),
                               command={"lay_off": hand_pb2.LayOff(meld_id=0,
                                                                   card=_cards("7♠")[0])}),
    "cannot_retrieve_joker": HandCase(
        hands=("K♠ K♥ JK1 Q♠ Q♥ Q♦ 6♥ 8♠", "2♣' 9♥'"),
        moves=(DRAW, _lay(_spec("K♠ K♥ JK1", JK1="K♣"), _spec("Q♠ Q♥ Q♦"))),
        command={"retrieve_joker": hand_pb2.RetrieveJoker(meld_id=0,
                                                          cards=_cards("6♥"))}),
    # Two melds worth 27 (below the 51 to open) leave the drawn 5♠ alone in the hand: a
    # "hand" in the making, which ends only by discarding it; laying it off onto 2♠ 3♠ 4♠
    # (which would otherwise go out) is refused.
    "hand_must_discard": HandCase(
        hands=("2♠ 3♠ 4♠ 5♥ 6♥ 7♥", "2♣' 9♥'"), stock="5♠ 8♦'",
        moves=(DRAW, _lay(_spec("2♠ 3♠ 4♠"), _spec("5♥ 6♥ 7♥"))),
        command={"lay_off": hand_pb2.LayOff(meld_id=0, card=_cards("5♠")[0])}),
}


def _hand_log(case: HandCase) -> list[log_pb2.Event]:
    """The log of ``case`` up to the command under test."""
    seats = len(case.hands)
    group = [common_pb2.Player(player_id=f"p{seat}") for seat in range(seats)]
    events = [
        hand_event(match_started=hand_pb2.HandMatchStarted(
            rules=resolve_rules(case.rules, seats), players=group,
            fairness=common_pb2.Fairness(server_seed_commitment=commit(SEED),
                                         client_seeds=[b""] * seats, server_seed=SEED))),
        hand_event(round_started=hand_pb2.HandRoundStarted(round=1, dealer=0, deal=1)),
        hand_event(cards_dealt=hand_pb2.HandCardsDealt(
            hands=[hand_pb2.HandDealtCards(seat=seat, cards=_cards(text),
                                           count=len(_cards(text)))
                   for seat, text in enumerate(case.hands)],
            stock=_cards(case.stock), stock_count=len(_cards(case.stock)))),
    ]
    for seq, event in enumerate(events, start=1):
        event.seq = seq
    state = hand.replay(events)
    # seat 1 opens the round with a discard; then whoever is to act makes each move
    moves: list[tuple[int | None, dict[str, Any]]] = []
    if not case.before_first_discard:
        moves.append((1, {"discard": hand_pb2.Discard(card=_cards(case.first_discard)[0])}))
    moves += [(None, move) for move in case.moves]
    for seat, move in moves:
        acting = hand.to_act(state) if seat is None else seat
        assert acting is not None
        for event in hand.decide(state, hand_command(acting, **move)):
            state = hand.evolve(state, event)
            events.append(event)
    return events


def _hand_trigger(case: HandCase) -> Trigger:
    async def send(api: Api) -> object:
        game_id = api.stored(common_pb2.GAME_TYPE_HAND, _hand_log(case))
        return await api.act(game_id, case.seat, hand=hand_command(case.seat, **case.command).hand)
    return send


for _code, _case in HAND_CASES.items():
    TRIGGERS.setdefault(_code, _hand_trigger(_case))  # duplicate_card: Hokm's already

# ---- tournaments ----

async def _tournament(api: Api, **settings: Any) -> str:
    """A new two-seat Hokm tournament hosted by ``t-host`` (``settings``: more
    TournamentSettings fields), created with an admin token: operators host any number of
    open tournaments, and every trigger here opens one."""
    fields: dict[str, Any] = {"game_type": common_pb2.GAME_TYPE_HOKM, "players_per_table": 2}
    reply = await api.tournament.CreateTournament(tournament_pb2.CreateTournamentRequest(
        settings=tournament_pb2.TournamentSettings(**{**fields, **settings})),
        metadata=api.auth("t-host", Role.ADMIN))
    return str(reply.tournament.tournament_id)


async def _enter(api: Api, tournament_id: str, player: str, **request: Any) -> object:
    """RegisterPlayer for ``player`` (``request``: more RegisterPlayerRequest fields)."""
    return await api.tournament.RegisterPlayer(tournament_pb2.RegisterPlayerRequest(
        tournament_id=tournament_id, **request), metadata=api.auth(player))


async def _start(api: Api, tournament_id: str) -> object:
    return await api.tournament.StartTournament(tournament_pb2.StartTournamentRequest(
        tournament_id=tournament_id), metadata=api.auth("t-host"))


async def _started(api: Api) -> str:
    """A tournament of t-p1 and t-p2 whose first round is seated."""
    tournament_id = await _tournament(api)
    for player in ("t-p1", "t-p2"):
        await _enter(api, tournament_id, player)
    await _start(api, tournament_id)
    return tournament_id


@trigger("tournament_not_found")
async def _tournament_not_found(api: Api) -> object:
    return await api.tournament.GetStandings(tournament_pb2.GetStandingsRequest(
        tournament_id="no-such-tournament"), metadata=api.auth("t-p1"))


@trigger("not_registered")
async def _not_registered(api: Api) -> object:
    tournament_id = await _tournament(api)
    await _enter(api, tournament_id, "t-p1")
    return await api.tournament.UnregisterPlayer(tournament_pb2.UnregisterPlayerRequest(
        tournament_id=tournament_id), metadata=api.auth("t-stranger"))


@trigger("too_many_open_tournaments")
async def _too_many_open_tournaments(api: Api) -> object:
    request = tournament_pb2.CreateTournamentRequest(settings=tournament_pb2.TournamentSettings(
        game_type=common_pb2.GAME_TYPE_HOKM))
    for _ in range(DEFAULT_OPEN_PER_PLAYER):
        await api.tournament.CreateTournament(request, metadata=api.auth("t-flooder"))
    return await api.tournament.CreateTournament(request, metadata=api.auth("t-flooder"))


@trigger("tournament_creation_restricted")
async def _tournament_creation_restricted(api: Api) -> object:
    # The deployment's setting: only operators create tournaments.
    api.monkeypatch.setattr(api.run.stack.tournament.service, "policy",
                            CreationPolicy(Creators.OPERATORS))
    return await api.tournament.CreateTournament(tournament_pb2.CreateTournamentRequest(
        settings=tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM)),
        metadata=api.auth("t-guest"))


@trigger("concurrent_step")
async def _concurrent_step(api: Api) -> object:
    tournament_id = await _tournament(api)

    def another_replica_won(*_args: Any, **_kwargs: Any) -> None:
        raise TournamentConflict("another replica appended at that seq")

    # The store's answer when another replica's step came first, on every attempt.
    api.monkeypatch.setattr(api.run.stack.tournament_store, "append", another_replica_won)
    tournaments = api.run.stack.tournament.tournaments
    lost = tournaments.conflicts
    try:
        return await _enter(api, tournament_id, "t-p1")
    finally:  # the refusal came after every retry the service allows, not before
        assert tournaments.conflicts - lost == MAX_ATTEMPTS


@trigger("tournament_invalid_options")
async def _tournament_invalid_options(api: Api) -> object:
    return await _tournament(api, rounds=MAX_ROUNDS + 1)


@trigger("tournament_invalid_id")
async def _tournament_invalid_id(api: Api) -> object:
    # The engine answers a rating out of its range with this code; only services and
    # admins give ratings.
    tournament_id = await _tournament(api)
    return await api.tournament.RegisterPlayer(tournament_pb2.RegisterPlayerRequest(
        tournament_id=tournament_id, rating=MAX_RATING + 1), metadata=api.service)


@trigger("tournament_registration_closed")
async def _tournament_registration_closed(api: Api) -> object:
    return await _enter(api, await _started(api), "t-late")


@trigger("tournament_already_registered")
async def _tournament_already_registered(api: Api) -> object:
    tournament_id = await _tournament(api)
    await _enter(api, tournament_id, "t-p1")
    return await _enter(api, tournament_id, "t-p1")


@trigger("tournament_player_already_entered")
async def _tournament_player_already_entered(api: Api) -> object:
    tournament_id = await _tournament(api, players_per_table=4, registered_pairs=True)
    await _enter(api, tournament_id, "t-p1", partner_id="t-p2")
    await _enter(api, tournament_id, "t-p2", partner_id="t-p1")  # the pair is in
    return await _enter(api, tournament_id, "t-p2", partner_id="t-p3")


@trigger("tournament_full")
async def _tournament_full(api: Api) -> object:
    tournament_id = await _tournament(api, max_players=2)
    await _enter(api, tournament_id, "t-p1")
    await _enter(api, tournament_id, "t-p2")
    return await _enter(api, tournament_id, "t-p3")


@trigger("tournament_already_started")
async def _tournament_already_started(api: Api) -> object:
    return await _start(api, await _started(api))


@trigger("tournament_too_few_entrants")
async def _tournament_too_few_entrants(api: Api) -> object:
    tournament_id = await _tournament(api)
    await _enter(api, tournament_id, "t-p1")
    return await _start(api, tournament_id)


def _always(command: tournament_engine.Command, _state: tournament_engine.TournamentState
            ) -> tournament_engine.Command:
    return command


@trigger("tournament_finished")
async def _tournament_finished(api: Api) -> object:
    # A tournament ends on its matches' results, which only the service reports (from
    # the games' events): another replica on the same store takes every step of a
    # one-round tournament, its one result included; the API then meets a finished log.
    replica = Tournaments(api.run.stack.tournament_store)
    created = await replica.create(tournament_pb2.TournamentSettings(
        game_type=common_pb2.GAME_TYPE_HOKM, players_per_table=2, rounds=1), "t-host")
    tournament_id = created.tournament_id
    commands: list[tournament_engine.Command] = [
        tournament_engine.Register("t-p1", ("t-p1",)),
        tournament_engine.Register("t-p2", ("t-p2",)),
        tournament_engine.Start(),
        tournament_engine.ReportResult(
            round=1, table=0, winners=(0,),
            sides=(tournament_engine.SideResult(points=7, tricks=7),
                   tournament_engine.SideResult(points=0, tricks=6))),
    ]
    for command in commands:
        await replica.step(tournament_id, functools.partial(_always, command))
    standings = await api.tournament.GetStandings(tournament_pb2.GetStandingsRequest(
        tournament_id=tournament_id), metadata=api.auth("t-p1"))
    assert standings.tournament.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    return await api.tournament.UnregisterPlayer(tournament_pb2.UnregisterPlayerRequest(
        tournament_id=tournament_id), metadata=api.auth("t-p1"))


UNREACHABLE: Final = {
    "discard_pile_empty": "a round opens with a discard and every turn ends with one (a "
                          "restock keeps the top card): no log leaves the pile empty when a "
                          "seat may take from it",
    "invalid_seat": "the services check a seat number against the match before the rules "
                    "see it (answered invalid_request); engine tests cover the rules' check",
    "joker_face_missing": "decoding a command refuses a joker without a face first "
                          "(malformed_command); engine/hand/test_melds covers the meld check",
    # The tournament service builds every command itself: these codes are the engine's
    # answer to commands no request can make (test_the_tournament_engine_raises_… below).
    "tournament_invalid_seed": "the service draws every tournament's seed (32 random "
                               "bytes) and keeps it in the log; no request names a seed",
    "tournament_wrong_team_size": "the service makes an entrant of the caller alone, or "
                                  "asks for the caller's partner_id in pairs (every pair "
                                  "is of two), refusing a partner who is the caller first "
                                  "(invalid_request)",
    "tournament_unknown_entrant": "UnregisterPlayer withdraws the caller's own entrant, "
                                  "found in the state; a caller in none is answered "
                                  "not_registered",
    "tournament_already_withdrawn": "UnregisterPlayer picks only an entrant that has not "
                                    "withdrawn (from the state it steps on); otherwise "
                                    "not_registered",
    "tournament_unknown_player": "no RPC and no service sends SetAbsent (marking a player "
                                 "absent)",
    "tournament_not_started": "results (ReportResult) are the service's own commands, read "
                              "from a seated round's finished matches; no RPC reports one",
    "tournament_wrong_round": "the service reports a result only for the current round "
                              "(its step re-checks the round on the state it follows)",
    "tournament_unknown_table": "the service reports results only for the tables the round "
                                "seated (found from the match's game id)",
    "tournament_result_already_recorded": "the service's step skips a table whose result "
                                          "is recorded (another replica reported it)",
    "tournament_invalid_result": "the service reads a result's sides from the finished "
                                 "match's events, one per side of the variant",
    "tournament_not_timed_out": "the service reports a table as timed out only when its "
                                "clock passes the round's deadline",
}


def test_the_triggers_cover_every_reason_but_the_unreachable_ones() -> None:
    reasons = {member.value for source in TABLES.SOURCES for member in source.enum}
    assert set(TRIGGERS) | set(UNREACHABLE) == reasons
    assert not set(TRIGGERS) & set(UNREACHABLE)


TOURNAMENT_CODES: Final = frozenset(code.value for code in tournament_engine.TournamentCode)
ENGINE_TOURNAMENT: Final = "t-engine"
ENGINE_OPTIONS: Final = tournament_engine.TournamentOptions(
    variant=tournament_engine.hokm_spec(2), entry=tournament_engine.Entry.INDIVIDUALS,
    rounds=1)
"""Two-seat Hokm tables, one entrant a player, one round, no time limit."""
TWO_SIDES: Final = (tournament_engine.SideResult(points=7, tricks=7),
                    tournament_engine.SideResult(points=0, tricks=6))


def _after(state: tournament_engine.TournamentState, command: tournament_engine.Command
           ) -> tournament_engine.TournamentState:
    for event in tournament_engine.decide(state, command):
        state = tournament_engine.evolve(state, event)
    return state


def _engine_tournament(entrants: int, *, started: bool = False
                       ) -> tournament_engine.TournamentState:
    """A tournament of ``e1``… as the engine makes it, seated when ``started``."""
    state = tournament_engine.replay(
        tournament_engine.create(ENGINE_TOURNAMENT, ENGINE_OPTIONS, SEED))
    for number in range(1, entrants + 1):
        state = _after(state, tournament_engine.Register(f"e{number}", (f"e{number}",)))
    return _after(state, tournament_engine.Start()) if started else state


def _result(**command: Any) -> tournament_engine.ReportResult:
    """Table 0's result in round 1, side 0 winning (``command``: fields to change)."""
    fields: dict[str, Any] = {"round": 1, "table": 0, "sides": TWO_SIDES, "winners": (0,)}
    return tournament_engine.ReportResult(**{**fields, **command})


ENGINE_REFUSALS: Final[dict[str, Callable[[], object]]] = {
    "tournament_invalid_seed": lambda: tournament_engine.create(
        ENGINE_TOURNAMENT, ENGINE_OPTIONS, b"too short"),
    "tournament_wrong_team_size": lambda: tournament_engine.decide(
        _engine_tournament(0), tournament_engine.Register("e1", ("e1", "e2"))),
    "tournament_unknown_entrant": lambda: tournament_engine.decide(
        _engine_tournament(1), tournament_engine.Withdraw("nobody")),
    "tournament_already_withdrawn": lambda: tournament_engine.decide(
        _after(_engine_tournament(2, started=True), tournament_engine.Withdraw("e1")),
        tournament_engine.Withdraw("e1")),
    "tournament_unknown_player": lambda: tournament_engine.decide(
        _engine_tournament(1), tournament_engine.SetAbsent("nobody", absent=True)),
    "tournament_not_started": lambda: tournament_engine.decide(
        _engine_tournament(2), _result()),
    "tournament_wrong_round": lambda: tournament_engine.decide(
        _engine_tournament(2, started=True), _result(round=2)),
    "tournament_unknown_table": lambda: tournament_engine.decide(
        _engine_tournament(2, started=True), _result(table=5)),
    "tournament_result_already_recorded": lambda: tournament_engine.decide(
        _after(_engine_tournament(4, started=True), _result()), _result()),
    "tournament_invalid_result": lambda: tournament_engine.decide(
        _engine_tournament(2, started=True), _result(sides=TWO_SIDES[:1])),
    "tournament_not_timed_out": lambda: tournament_engine.decide(
        _engine_tournament(2, started=True), _result(winners=(), timed_out=True)),
}
"""A direct engine call per tournament code no request reaches, raising exactly it."""


def test_the_tournament_engine_raises_each_code_no_request_reaches() -> None:
    assert set(ENGINE_REFUSALS) == set(UNREACHABLE) & TOURNAMENT_CODES
    for code, refuse in ENGINE_REFUSALS.items():
        with pytest.raises(RuleViolation) as caught:
            refuse()
        assert caught.value.code == code, (code, caught.value.message)
        # The status the client guide gives it: INVALID_ARGUMENT exactly for the malformed.
        assert isinstance(caught.value, InvalidCommand) == (code in TABLES.MALFORMED), code


TOURNAMENT_REASONS: Final = TOURNAMENT_CODES | {
    reason.value for reason in SOURCE_ENUMS["TournamentServiceReason"]}
"""The reasons whose status code the client check below compares with the guide's."""


def _documented_statuses(reason: str) -> set[str]:
    """The status codes the client guide (scripts/reason_tables.py) gives ``reason``."""
    guidance = TABLES.GUIDANCE.get(reason)
    if guidance is not None:
        return set(str(guidance.status).split(" / "))
    return {"INVALID_ARGUMENT" if reason in TABLES.MALFORMED else "FAILED_PRECONDITION"}


async def test_the_client_sees_each_reason_it_triggers(monkeypatch: pytest.MonkeyPatch) -> None:
    with IDP, DOWN_IDP:
        seen = await _trigger_each(monkeypatch)
    wrong = {reason: got for reason, got in seen.items() if got != _wire(reason)}
    assert wrong == {}, wrong


async def _trigger_each(monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """Every reason of :data:`TRIGGERS` as the client read it back (or what it got)."""
    seen: dict[str, str | None] = {}
    async with stack(timers=False, bots=False, limits=LIMITS,
                     oidc_providers=_oidc_providers()) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        for reason, send in TRIGGERS.items():
            with monkeypatch.context() as patch:
                api = Api(run, channel, patch)
                api._games = len(seen) * 10
                try:
                    await asyncio.wait_for(send(api), timeout=20)
                except grpc.aio.AioRpcError as error:
                    info = error_info_of(error)
                    assert info is not None, f"{reason}: no ErrorInfo ({error.details()})"
                    assert info.domain == DOMAIN
                    right = reason_of(error) == reason and (
                        reason not in TOURNAMENT_REASONS
                        or error.code().name in _documented_statuses(reason))
                    seen[reason] = info.reason if right else (
                        f"{info.reason} ({error.code().name}: {error.details()})")
                else:
                    seen[reason] = "accepted"
    return seen
