"""The composition root: the one place that puts dast's services together in a process.

No service package imports another (``tests/services/test_service_boundaries.py`` checks
it): the game service owns the event store, the lobby its tables, the bot service nothing
but memory; what one needs from another comes over gRPC (the lobby and the bots call the
game service) or as events on the bus. This module is the only code that knows them all.
It starts any set of them in one process, over the shared building blocks of
:mod:`services.platform` (settings, bus, gRPC server, signing key, metrics):

- ``dast serve`` (``make run``): every service on the embedded defaults (a SQLite file
  under ``.dast/``, the in-process bus), the lobby and the bots calling this process's
  game service;
- ``dast serve --services game`` (or ``lobby``, ``bot``, ``tournament``, ``stats``,
  ``accounts``) against
  PostgreSQL and NATS: one service per process, as ``deploy/local-stack.sh`` and ``k8s/``
  run them. A process without the game service reaches it at ``DAST_GAME_TARGET``, which
  may list several replicas (``ipv4:127.0.0.1:50061,127.0.0.1:50062``): gRPC's
  ``round_robin`` spreads the calls (:mod:`services.platform.channels`).

Presence is shared through a board (:mod:`services.platform.presence_kv`: a JetStream
key-value bucket with NATS, memory in one process): every game replica reports its players'
streams there, and the bot service's :class:`~services.bot.presence.Takeovers` hands the seat
of a player no replica has seen for the grace period to a bot through the game service,
which records it in the game's log; the bots learn who controls a seat from that log.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import grpc
import structlog

from services.platform.auth import Role, mint_token
from services.platform.bans import Bans, InProcessBans, open_bans
from services.platform.bus import Bus, InProcessBus, Published, cancel_and_wait, open_bus
from services.platform.channels import service_channel
from services.platform.clock import Clock, wall_clock_ms
from services.platform.config import Settings, load_settings, masked_url
from services.platform.keys import LogSigner, load_signer
from services.platform.limits import CallerLimits
from services.platform.logging import configure_logging
from services.platform.metrics import GameMetrics, serve_metrics
from services.platform.nats_names import DEFAULT_DEPLOYMENT, NatsNames
from services.platform.presence_kv import (
    InProcessPresenceBoard,
    PresenceBoard,
    PresenceReporter,
    open_presence_board,
)
from services.platform.relay import Relay, RelayThread
from services.platform.revocations import InProcessRevocations, Revocations, open_revocations
from services.platform.server import add_health_and_reflection, bind, make_server
from services.platform.store import OutboxStore, open_store
from services.platform.store_heads import last_stored_events, readable
from services.platform.table_feed import InProcessTableFeed, TableFeed, open_table_feed
from services.platform.token_keys import OPERATOR, TokenKeys, load_token_keys

# A process imports only the services it runs (each import below is made where its service
# is started): a bot replica does not load the lobby's, the stats' or the game service's
# code, nor their stores' tables.
if TYPE_CHECKING:
    from dast.v1 import lobby_pb2
    from services.accounts.moderation_store import ModerationStore
    from services.accounts.service import AccountsService
    from services.accounts.store import AccountsStore
    from services.bot.presence import Takeovers
    from services.bot.service import BotService
    from services.bot.stack import BotWorkers
    from services.bot.timers import TurnTimers
    from services.chat.app import TableTalk
    from services.chat.rules import TalkRules
    from services.chat.store import ChatStore
    from services.chat.tables import TableFacts
    from services.chat.talk_log import TalkLog
    from services.console.server import ConsoleServer
    from services.game.service import GameService
    from services.lobby.app import Lobby
    from services.lobby.changes import Tables
    from services.lobby.store import LobbyStore
    from services.stats.app import Stats
    from services.stats.store import StatsStore
    from services.tournament.app import TournamentApp
    from services.tournament.store import TournamentStore

KNOWN_SERVICES: Final = ("game", "lobby", "bot", "tournament", "stats", "accounts")
"""The gRPC services ``--services`` may name ("all" = every one); table talk and reports run
with the lobby."""
CONSOLE: Final = "console"
"""The operator console (a web application over the others' gRPC APIs): named on its own
(``--services console``, or ``all,console`` as ``make run`` does); "all" leaves it out, so
that a process serving every service does not take the console's port unasked."""
GIL_SWITCH_SECONDS: Final = 0.0005
GC_YOUNG_THRESHOLD: Final = 10_000


def settle_collector() -> None:
    """Tune the cyclic garbage collector for serving, once what lives as long as the process
    is loaded (the servers, and the benches' clients before they time anything).

    Everything loaded so far (modules, SQLAlchemy, gRPC, protobuf: ~80k objects in a server)
    is frozen out of the collector, whose full collections otherwise scan it all and stall
    every call in flight for 50-60 ms under load. A call allocates hundreds of objects:
    young collections every 700 allocations cost ~2 % of the CPU at full speed; every
    10,000 keeps them rare and still cheap.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


@dataclass(frozen=True)
class StackOptions:
    """Tunables of the services (tests shorten the times)."""

    grace_ms: int = 15_000
    """How long a player's game stream may be gone before a bot takes the seat."""
    timer_shift_ms: int = 0
    """Added to every deadline before it fires (tests: negative, so turns run out fast)."""
    bots: bool = True
    timers: bool = True
    presence: bool = True
    presence_heartbeat_ms: int = 5_000
    """How often a game replica renews its presence reports (a report three heartbeats old
    is a dead replica's)."""
    token_ttl_seconds: int = 24 * 3600
    durable_prefix: str = ""
    """Prefix of the bus durable names (``<prefix>bots`` …), so test runs stay apart."""
    tournament_sweep_seconds: float = 5.0
    """How often a tournament replica checks its running rounds for missed results."""
    tournament_creators: str = "anyone"
    """Who may create tournaments (``DAST_TOURNAMENT_CREATORS``: anyone, accounts,
    operators)."""
    tournament_open_per_player: int = 2
    """Open tournaments one player may host at once (``DAST_TOURNAMENT_OPEN_PER_PLAYER``)."""
    access_token_minutes: int = 15
    """Lifetime of the accounts service's access tokens (``DAST_ACCESS_TOKEN_MINUTES``)."""
    access_token_seconds: int = 0
    """When not 0, their lifetime in seconds instead (``DAST_ACCESS_TOKEN_SECONDS``)."""
    refresh_token_days: int = 30
    """Lifetime of the accounts service's refresh tokens (``DAST_REFRESH_TOKEN_DAYS``)."""
    oidc_providers: str = ""
    """The identity providers whose ID tokens sign players in (``DAST_OIDC_PROVIDERS``)."""
    chat_max_chars: int = 200
    """Longest message of table talk (``DAST_CHAT_MAX_CHARS``)."""
    chat_messages_per_window: int = 5
    """Messages a player may send in a window (``DAST_CHAT_MESSAGES_PER_WINDOW``)..."""
    chat_window_ms: int = 10_000
    """...of this many milliseconds (``DAST_CHAT_WINDOW_SECONDS``)."""
    chat_retention_days: float = 7.0
    """How long table talk is kept (``DAST_CHAT_RETENTION_DAYS``)."""
    report_retention_days: float = 90.0
    """How long players' reports are kept (``DAST_REPORT_RETENTION_DAYS``)."""
    guest_idle_days: float = 10.0
    """Idle time after which a guest is erased (``DAST_GUEST_IDLE_DAYS``)."""
    lobby_device_sign_in: bool = False
    """Whether the lobby's ``SignInGuest`` signs a device in by its id alone
    (``DAST_LOBBY_DEVICE_SIGN_IN``; off: it refuses, ``device_sign_in_retired``)."""

    def talk_rules(self) -> TalkRules:
        """The limits of table talk."""
        from services.chat.rules import TalkRules

        return TalkRules(self.chat_max_chars, self.chat_messages_per_window,
                         self.chat_window_ms, self.chat_retention_days)

    @property
    def revocation_minutes(self) -> int:
        """How long a revoked session is remembered: the access tokens' lifetime, in whole
        minutes rounded up."""
        return -(-(self.access_token_seconds or self.access_token_minutes * 60) // 60)


def parse_services(text: str) -> list[str]:
    """The services named in a comma-separated list ("all" = every gRPC service; the console
    is named on its own), in a fixed order.

    :raises ValueError: for an unknown name.
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    if "all" in names:
        names = [*KNOWN_SERVICES, *(name for name in names if name != "all")]
    known = (*KNOWN_SERVICES, CONSOLE)
    unknown = sorted(set(names) - set(known))
    if unknown or not names:
        raise ValueError(f"unknown services {unknown}; known: all, {', '.join(known)}")
    return [name for name in known if name in names]


def in_process_bus(store_url: str | None) -> InProcessBus:
    """The embedded bus; its last events come from this process's event store."""
    if not readable(store_url):
        return InProcessBus()
    assert store_url is not None

    async def history() -> list[Published]:
        return await asyncio.to_thread(last_stored_events, store_url)

    return InProcessBus(history=history)


@dataclass
class Composition:
    """The chosen services of one process, mounted on its gRPC server.

    Build it, :meth:`mount` it on the server, start the server, then :meth:`start` it with
    the game service's target (this process's address when it runs the game service).
    """

    names: list[str]
    tokens: TokenKeys
    """The ring this process verifies tokens with, and the private keys of its services."""
    bus: Bus
    store: OutboxStore | None
    """The event store (the game service's own), when this process runs it."""
    lobby_store: LobbyStore | None
    """The lobby's tables, when this process runs the lobby."""
    notify: Callable[[], None] = lambda: None
    """Wakes the relay after each append."""
    options: StackOptions = field(default_factory=StackOptions)
    signer: LogSigner | None = None
    metrics: GameMetrics | None = None
    clock: Clock = wall_clock_ms
    """The one clock every service started here reads (tests pass their own)."""
    tables: Tables | None = field(init=False, default=None)
    revocations: Revocations = field(default_factory=InProcessRevocations)
    """Where the accounts service publishes the sessions it ends and every server reads
    them (:func:`open_revocations`; pass the same to :func:`make_server`)."""
    bans: Bans = field(default_factory=InProcessBans)
    """Where the accounts service publishes the bans operators decide and every server reads
    them (:func:`open_bans`; pass the same to :func:`make_server`)."""
    board: PresenceBoard = field(default_factory=InProcessPresenceBoard)
    """Where game replicas report their players' streams and the takeovers read them
    (callers open it on :attr:`clock`: :func:`open_presence_board`)."""
    feed: TableFeed = field(default_factory=InProcessTableFeed)
    """Where the lobby publishes its tables' changes."""
    tournament_store: TournamentStore | None = None
    """The tournament service's logs, when this process runs it."""
    tournament_bus: Bus = field(default_factory=InProcessBus)
    """Where the tournaments' events go (a stream apart from the games')."""
    tournament: TournamentApp | None = field(init=False, default=None)
    stats_store: StatsStore | None = None
    """The stats service's tables, when this process runs it."""
    stats: Stats | None = field(init=False, default=None)
    accounts_store: AccountsStore | None = None
    """The accounts service's tables, when this process runs it."""
    moderation_store: ModerationStore | None = None
    """Its moderation tables (bans, the operators' action log)."""
    accounts: AccountsService | None = field(init=False, default=None)
    chat_store: ChatStore | None = None
    """Table talk's tables (reports, mutes), when this process runs the lobby."""
    talk: TalkLog | None = None
    """Where the tables' talk is kept (:func:`services.chat.talk_log.open_talk_log`); None:
    in memory, on :attr:`clock`."""
    table_talk: TableTalk | None = field(init=False, default=None)
    reporter: PresenceReporter | None = field(init=False, default=None)
    takeovers: Takeovers | None = field(init=False, default=None)
    lobby: Lobby | None = field(init=False, default=None)
    game: GameService | None = field(init=False, default=None)
    """The game service, when this process runs it."""
    workers: BotWorkers | None = field(init=False, default=None)
    _channel: grpc.aio.Channel | None = field(init=False, default=None)
    _tasks: list[asyncio.Task[None]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if self.lobby_store is not None:
            from services.lobby.changes import Tables

            self.tables = Tables(self.lobby_store, clock=self.clock)
        if self.store is not None and self.options.presence:
            self.reporter = PresenceReporter(self.board, clock=self.clock,
                                             heartbeat_ms=self.options.presence_heartbeat_ms)

    @property
    def bots(self) -> BotService | None:
        """The bot service, when this process runs it (tests read its counters)."""
        return self.workers.bots if self.workers is not None else None

    @property
    def timers(self) -> TurnTimers | None:
        """The turn timers, when this process runs them."""
        return self.workers.timers if self.workers is not None else None

    def mount(self, server: grpc.aio.Server) -> list[str]:
        """Add this process's gRPC services to ``server``; their names."""
        mounted: list[str] = []
        if self.store is not None:
            from services.game.app import SERVICE_NAMES as GAME_SERVICE_NAMES
            from services.game.app import mount_game_service

            self.game = mount_game_service(
                server, self.store, self.bus, self.notify, metrics=self.metrics,
                signer=self.signer, presence=self.reporter, clock=self.clock,
            )
            mounted.extend(str(name) for name in GAME_SERVICE_NAMES)
        if self.lobby_store is not None:
            from services.lobby.app import SERVICE_NAME as LOBBY_SERVICE_NAME
            from services.lobby.app import mount_lobby_service

            self.lobby = mount_lobby_service(
                server, self.lobby_store, signer=self.tokens.signer("lobby"),
                token_ttl_seconds=self.options.token_ttl_seconds, table_writer=self.tables,
                clock=self.clock, device_sign_in=self.options.lobby_device_sign_in,
            )
            mounted.append(str(LOBBY_SERVICE_NAME))
            mounted.extend(self._mount_table_talk(server, self.lobby_store))
        if self.tournament_store is not None:
            from services.tournament.app import TournamentApp
            from services.tournament.policy import CreationPolicy, Creators

            self.tournament = TournamentApp.build(
                self.tournament_store, self.tournament_bus,
                signer=self.tokens.signer("tournament"),
                clock=self.clock, sweep_seconds=self.options.tournament_sweep_seconds,
                policy=CreationPolicy(Creators(self.options.tournament_creators),
                                      self.options.tournament_open_per_player),
            )
            mounted.append(self.tournament.mount(server))
        if self.stats_store is not None:
            from services.stats.app import SERVICE_NAME as STATS_SERVICE_NAME
            from services.stats.app import mount_stats_service

            self.stats = mount_stats_service(server, self.stats_store, clock=self.clock)
            mounted.append(str(STATS_SERVICE_NAME))
        if self.accounts_store is not None:
            from services.accounts.app import SERVICE_NAMES as ACCOUNTS_SERVICE_NAMES
            from services.accounts.app import mount_accounts_service
            from services.accounts.sessions import TokenPolicy

            self.accounts = mount_accounts_service(
                server, self.accounts_store, signer=self.tokens.signer("accounts"),
                ring=self.tokens.ring, clock=self.clock,
                policy=TokenPolicy(self.options.access_token_minutes,
                                   self.options.refresh_token_days,
                                   access_seconds=self.options.access_token_seconds),
                oidc_providers=self.options.oidc_providers, revocations=self.revocations,
                moderation_store=self.moderation_store, bans=self.bans,
                guest_idle_days=self.options.guest_idle_days,
            )
            mounted.extend(str(name) for name in ACCOUNTS_SERVICE_NAMES)
        return mounted

    def _mount_table_talk(self, server: grpc.aio.Server, lobby_store: LobbyStore
                          ) -> list[str]:
        """Table talk and reports beside the lobby, over its tables."""
        from services.chat.app import SERVICE_NAMES as TALK_SERVICE_NAMES
        from services.chat.app import mount_table_talk
        from services.chat.store import ChatStore
        from services.chat.talk_log import open_talk_log

        rules = self.options.talk_rules()
        if self.talk is None:
            self.talk = open_talk_log(None, stream="", subject_prefix="",
                                      retention_days=rules.retention_days, clock=self.clock)
        self.table_talk = mount_table_talk(
            server, LobbyDirectory(lobby_store), self.chat_store or ChatStore.open(None),
            self.talk, rules=rules, report_retention_days=self.options.report_retention_days,
            clock=self.clock)
        return [str(name) for name in TALK_SERVICE_NAMES]

    async def start(self, game_target: str) -> None:
        """Run the background work, calling the game service at ``game_target``."""
        prefix = self.options.durable_prefix
        await self.revocations.start()
        # Told of bans before the list's first snapshot arrives, so that a ban decided while
        # this process was down still takes its player out of tables and tournaments.
        if self.game is not None:
            self.bans.listen(self.game.on_ban)
        if self.lobby is not None:
            self.bans.listen(self.lobby.on_ban)
        if self.tournament is not None:
            self.bans.listen(self.tournament.on_ban)
        if self.stats is not None:
            self.bans.listen(self.stats.on_ban)
        if self.table_talk is not None:
            self.bans.listen(self.table_talk.on_ban)
        await self.bans.start()
        if self.accounts is not None and self.accounts.moderation is not None:
            self._spawn(self.accounts.moderation.run())
        if self.accounts is not None and self.accounts.retention is not None:
            self._spawn(self.accounts.retention.run())
        if self.table_talk is not None:
            await self.table_talk.talk.start()
            self._spawn(self.table_talk.run())
        presence_on = self.options.presence and (
            self.reporter is not None or ("bot" in self.names and self.options.bots)
            or self.tournament is not None)
        if presence_on:
            await self.board.start()
        if self.reporter is not None:
            self._spawn(self.reporter.run())
        if self.lobby is not None:
            await self.feed.start()
            self._spawn(self.lobby.run(self.bus, game_target=game_target,
                                       durable=f"{prefix}lobby", feed=self.feed))
        if self.tournament is not None:
            await self.tournament_bus.start()
            # The players of its matches are expected on the presence board, which the
            # takeovers read (services.tournament.attendance).
            self.tournament.start(self.bus, game_target=game_target,
                                  durable=f"{prefix}tournaments",
                                  board=self.board if self.options.presence else None)
        if self.stats is not None:
            self._spawn(self.stats.follow(self.bus, durable=f"{prefix}stats",
                                          game_target=game_target,
                                          signer=self.tokens.signer("stats")))
        if "bot" in self.names and (self.options.bots or self.options.timers):
            from services.bot.client import GrpcGameApi
            from services.bot.presence import Takeovers
            from services.bot.seats import LogSeats
            from services.bot.stack import BotWorkers

            self._channel = service_channel(game_target)
            api = GrpcGameApi(self._channel, self.tokens.signer("bot"))
            self.workers = BotWorkers(
                api, LogSeats(), self.bus,
                bots_on=self.options.bots, timers_on=self.options.timers,
                timer_shift_ms=self.options.timer_shift_ms, durable_prefix=prefix,
                clock=self.clock,
            )
            self._tasks.extend(self.workers.start())
            if self.options.bots and self.options.presence:
                self.takeovers = Takeovers(
                    self.board,
                    GrpcGameApi(self._channel, self.tokens.signer("bot"), player_id="presence"),
                    grace_ms=self.options.grace_ms,
                    stale_ms=3 * self.options.presence_heartbeat_ms, clock=self.clock,
                )
                self._spawn(self.takeovers.sweep_forever())

    def _spawn(self, work: Awaitable[None]) -> None:
        self._tasks.append(asyncio.ensure_future(work))

    async def stop(self) -> None:
        """Cancel the background work and close the channel to the game service."""
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        if self.tournament is not None:
            await self.tournament.stop()
            await self.tournament_bus.close()
        if self._channel is not None:
            await self._channel.close()
        await self.board.close()
        await self.revocations.close()
        await self.bans.close()
        if self.lobby is not None:
            await self.feed.close()
        if self.table_talk is not None:
            await self.table_talk.talk.close()


class LobbyDirectory:
    """Table talk's :class:`~services.chat.tables.TableDirectory` over the lobby's store of
    this process (the lobby owns the tables; the chat package cannot import it)."""

    def __init__(self, store: LobbyStore) -> None:
        self.store = store

    async def table(self, table_id: str) -> TableFacts | None:
        """See :meth:`~services.chat.tables.TableDirectory.table`."""
        return await asyncio.to_thread(self._facts, self.store.get, table_id)

    async def table_of_game(self, game_id: str) -> TableFacts | None:
        """See :meth:`~services.chat.tables.TableDirectory.table_of_game`."""
        return await asyncio.to_thread(self._facts, self.store.by_game, game_id)

    async def match(self, game_id: str) -> TableFacts | None:
        """See :meth:`~services.chat.tables.TableDirectory.match`."""
        return await asyncio.to_thread(self._facts, self.store.match_table, game_id)

    @staticmethod
    def _facts(find: Callable[[str], lobby_pb2.Table], key: str) -> TableFacts | None:
        from services.chat.tables import TableFacts
        from services.lobby.store import TableNotFound

        try:
            return TableFacts.of(find(key))
        except TableNotFound:
            return None


@dataclass
class Running:
    """A composition serving on loopback (tests and benchmarks)."""

    address: str
    stack: Composition
    store: OutboxStore


@contextlib.asynccontextmanager
async def running_stack(
    tokens: TokenKeys, *, store_url: str | None = None, nats_url: str | None = None,
    options: StackOptions | None = None, listen: str = "127.0.0.1:0",
    metrics: GameMetrics | None = None, limits: CallerLimits | None = None,
    deployment: str = DEFAULT_DEPLOYMENT, clock: Clock = wall_clock_ms,
) -> AsyncIterator[Running]:
    """Serve every service (store, bus, relay, game, lobby, bots, timers) in this process
    until exit (``tokens``: the ring and the private key of every issuing service;
    ``limits``: the per-caller limits, default :class:`CallerLimits`;
    ``deployment``: the deployment whose NATS streams, subjects and presence bucket it
    uses with NATS, as ``DAST_DEPLOYMENT`` does; ``clock``: the one clock of every service
    and of presence)."""
    from services.accounts.moderation_store import ModerationStore
    from services.accounts.store import AccountsStore
    from services.chat.store import ChatStore
    from services.chat.talk_log import open_talk_log
    from services.lobby.store import LobbyStore
    from services.stats.store import StatsStore
    from services.tournament.store import TournamentStore

    store = await asyncio.to_thread(open_store, store_url)
    accounts_store = await asyncio.to_thread(AccountsStore.open, store_url)
    moderation_store = await asyncio.to_thread(ModerationStore.open, store_url)
    lobby_store = await asyncio.to_thread(LobbyStore.open, store_url)
    chat_store = await asyncio.to_thread(ChatStore.open, store_url)
    tournament_store = await asyncio.to_thread(TournamentStore.open, store_url)
    stats_store = await asyncio.to_thread(StatsStore.open, store_url)
    names = NatsNames(deployment)
    bus = events_bus(nats_url, names) if nats_url else in_process_bus(store_url)
    await bus.start()
    relay = Relay(store, bus, poll_seconds=0.2)
    relay_task = asyncio.create_task(relay.run())
    options = options or StackOptions()
    revocations = open_revocations(nats_url, bucket=names.revoked_bucket,
                                   access_minutes=options.revocation_minutes, clock=clock)
    bans = open_bans(nats_url, bucket=names.banned_bucket, clock=clock)
    stack = Composition(list(KNOWN_SERVICES), tokens, bus, store, lobby_store, relay.notify,
                        options, metrics=metrics, clock=clock, revocations=revocations,
                        bans=bans,
                        board=open_presence_board(nats_url, bucket=names.presence_bucket,
                                                  clock=clock),
                        tournament_store=tournament_store,
                        tournament_bus=_tournaments_bus_of(nats_url, names),
                        stats_store=stats_store, accounts_store=accounts_store,
                        moderation_store=moderation_store, chat_store=chat_store,
                        talk=open_talk_log(nats_url, stream=names.chat_stream,
                                           subject_prefix=names.chat_prefix,
                                           retention_days=options.chat_retention_days,
                                           clock=clock))
    server = make_server(tokens.ring, limits=limits, revocations=revocations, bans=bans)
    await add_health_and_reflection(server, stack.mount(server))
    port = bind(server, listen)
    await server.start()
    address = f"127.0.0.1:{port}"
    await stack.start(address)
    try:
        yield Running(address, stack, store)
    finally:
        await stack.stop()  # first, so that no bot call meets a stopped server
        await server.stop(None)
        relay_task.cancel()
        with contextlib.suppress(BaseException):
            await relay_task
        await bus.close()
        await asyncio.to_thread(lobby_store.close)
        await asyncio.to_thread(tournament_store.close)
        await asyncio.to_thread(stats_store.close)
        await asyncio.to_thread(accounts_store.close)
        await asyncio.to_thread(moderation_store.close)
        await asyncio.to_thread(chat_store.close)
        await asyncio.to_thread(store.close)


def events_bus(nats_url: str, names: NatsNames) -> Bus:
    """The games' bus of a deployment on NATS: its events stream and subjects."""
    return open_bus(nats_url, stream=names.events_stream, subject_prefix=names.events_prefix)


def _tournaments_bus_of(nats_url: str | None, names: NatsNames) -> Bus:
    """The tournaments' bus beside a test stack's games' bus (the same deployment's)."""
    if not nats_url:
        return InProcessBus()
    from services.tournament.app import tournaments_bus

    return tournaments_bus(load_settings(nats_url=nats_url, deployment=names.deployment))


def _loopback(listen: str) -> str:
    host = listen.rpartition(":")[0]
    return "127.0.0.1" if host in ("0.0.0.0", "[::]", "") else host


def banner(settings: Settings, names: list[str], port: int,
           tokens: TokenKeys | None = None) -> str:
    """What ``dast serve`` prints once it listens (URLs without passwords; an admin token
    when ``tokens`` holds the operator's key: the embedded mode's own keys)."""
    host = _loopback(settings.listen)
    store = masked_url(settings.database_url or settings.store_url())
    bus = masked_url(settings.nats_url) if settings.nats_url else "in-process"
    lines = [
        f"dast listening on {host}:{port} (services: {', '.join(names)})",
        *([f"  store: {store}"] if {"game", "lobby", "tournament", "stats", "accounts"}
          & set(names)
          else []),  # bots have none
        f"  bus:   {bus}",
        f"  try:   grpcurl -plaintext {host}:{port} list",
    ]
    if settings.game_target and "game" not in names:
        lines.append(f"  game service: {settings.game_target}")
    if settings.metrics_port:
        lines.append(f"  metrics: http://{settings.metrics_host}:{settings.metrics_port}/metrics")
    operator = tokens.signers.get(OPERATOR) if tokens is not None else None
    if operator is not None:
        token = mint_token(operator, "dev-admin", Role.ADMIN)
        lines.append(f"  token keys made under {settings.data_dir} (embedded mode). Admin token:")
        lines.append(f"  authorization: Bearer {token}")
    return "\n".join(lines)


def _talk_log(settings: Settings, clock: Clock) -> TalkLog:
    """The deployment's chat stream (memory in the embedded mode)."""
    from services.chat.talk_log import open_talk_log

    names = settings.nats_names()
    return open_talk_log(settings.nats_url, stream=names.chat_stream,
                         subject_prefix=names.chat_prefix,
                         retention_days=settings.chat_retention_days, clock=clock)


async def _start_console(settings: Settings, names: list[str], tokens: TokenKeys,
                         own: str) -> ConsoleServer:
    """The operator console, serving; it reaches the services this process runs at ``own``
    and the others where ``DAST_CONSOLE_TARGETS`` (or ``DAST_GAME_TARGET``) says."""
    from services.console.app import build_app
    from services.console.backend import Backend, ConsoleTargets
    from services.console.server import ConsoleServer

    serves_grpc = any(name in KNOWN_SERVICES for name in names)
    targets = ConsoleTargets.parse(settings.console_targets,
                                   default=own if serves_grpc else settings.game_target or "")
    console = ConsoleServer(build_app(Backend(targets), tokens.ring), settings.console_listen)
    await console.start()
    return console


def _check_game_target(settings: Settings, names: list[str]) -> None:
    if "game" not in names and ({"lobby", "bot", "tournament"} & set(names)) and (
            not settings.game_target):
        raise ValueError(
            f"--services {','.join(names)} runs without the game service: set "
            "DAST_GAME_TARGET to its address (host:port, or ipv4:host:port,host:port for "
            "several replicas)"
        )


async def run(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    """Serve the services ``settings.services`` names until SIGINT/SIGTERM (or ``stop``).

    :raises ValueError: for unknown service names or a missing game target, and
        (:class:`~services.platform.config.ConfigError`,
        :class:`~services.platform.keys.SigningKeyError`,
        :class:`~services.platform.token_keys.TokenKeyError`) for keys that are missing,
        published, unreadable or not this process's.
    """
    names = parse_services(settings.services)
    _check_game_target(settings, names)
    settings.check_secrets()
    signer = load_signer(settings)
    own_keys = settings.is_embedded() and not settings.token_keys
    tokens = load_token_keys(settings.token_keys, settings.token_signing_keys, services=names,
                             embedded=settings.is_embedded(), data_dir=settings.data_dir,
                             operator=own_keys)
    configure_logging(settings.log_level, json=settings.log_json)
    # The store's writer thread hands the GIL back and forth with the event loop on every
    # statement; at the default 5 ms switch interval it waits behind the loop for most of
    # them (a command's latency was then mostly GIL waits).
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    log = structlog.get_logger(component="compose")
    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    store_url = settings.store_url()
    store = await asyncio.to_thread(open_store, store_url) if "game" in names else None
    lobby_store = tournament_store = stats_store = accounts_store = moderation_store = None
    chat_store = None
    tournament_bus: Bus = InProcessBus()
    if "lobby" in names:
        from services.chat.store import ChatStore
        from services.lobby.store import LobbyStore

        lobby_store = await asyncio.to_thread(LobbyStore.open, store_url)
        chat_store = await asyncio.to_thread(ChatStore.open, store_url)
    if "tournament" in names:
        from services.tournament.app import tournaments_bus
        from services.tournament.store import TournamentStore

        tournament_store = await asyncio.to_thread(TournamentStore.open, store_url)
        tournament_bus = tournaments_bus(settings)
    if "stats" in names:
        from services.stats.store import StatsStore

        stats_store = await asyncio.to_thread(StatsStore.open, store_url)
    if "accounts" in names:
        from services.accounts.moderation_store import ModerationStore
        from services.accounts.store import AccountsStore

        accounts_store = await asyncio.to_thread(AccountsStore.open, store_url)
        moderation_store = await asyncio.to_thread(ModerationStore.open, store_url)
    # SQLite has one writer: one store thread avoids threads queueing on its lock; a
    # PostgreSQL pool serves many connections at once.
    workers = 16 if settings.database_url and "postgresql" in settings.database_url else 2
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(workers, thread_name_prefix="store")
    )
    nats_names = settings.nats_names()
    bus = (events_bus(settings.nats_url, nats_names) if settings.nats_url
           else in_process_bus(store_url))
    await bus.start()
    # On NATS the relay publishes from a thread and event loop of its own (with its own
    # connection), so publishing never takes turns with the requests on this loop.
    relay: Relay | RelayThread | None = None
    if store is not None and settings.nats_url:
        nats_url = settings.nats_url
        relay = RelayThread(store, lambda: events_bus(nats_url, nats_names))
    elif store is not None:
        relay = Relay(store, bus)
    relay_task = asyncio.create_task(relay.run(), name="relay") if relay is not None else None
    # One clock for every service and the presence board, so that reporters, the board and
    # the takeovers agree on how old a report is.
    clock: Clock = wall_clock_ms
    options = StackOptions(
        token_ttl_seconds=settings.token_ttl_seconds,
        grace_ms=int(settings.presence_grace_seconds * 1000),
        presence_heartbeat_ms=int(settings.presence_heartbeat_seconds * 1000),
        access_token_minutes=settings.access_token_minutes,
        access_token_seconds=settings.access_token_seconds,
        lobby_device_sign_in=settings.lobby_device_sign_in,
        refresh_token_days=settings.refresh_token_days,
        tournament_creators=settings.tournament_creators,
        tournament_open_per_player=settings.tournament_open_per_player,
        oidc_providers=settings.oidc_providers,
        chat_max_chars=settings.chat_max_chars,
        chat_messages_per_window=settings.chat_messages_per_window,
        chat_window_ms=int(settings.chat_window_seconds * 1000),
        chat_retention_days=settings.chat_retention_days,
        report_retention_days=settings.report_retention_days,
        guest_idle_days=settings.guest_idle_days,
    )
    composition = Composition(
        names, tokens, bus, store, lobby_store,
        relay.notify if relay is not None else (lambda: None),
        options,
        signer=signer, clock=clock,
        board=open_presence_board(settings.nats_url, bucket=nats_names.presence_bucket,
                                  clock=clock),
        feed=open_table_feed(settings.nats_url, stream=nats_names.tables_stream,
                             subject_prefix=nats_names.tables_prefix),
        tournament_store=tournament_store, tournament_bus=tournament_bus,
        stats_store=stats_store, accounts_store=accounts_store,
        moderation_store=moderation_store, chat_store=chat_store,
        talk=_talk_log(settings, clock) if lobby_store is not None else None,
        revocations=open_revocations(settings.nats_url, bucket=nats_names.revoked_bucket,
                                     access_minutes=options.revocation_minutes, clock=clock),
        bans=open_bans(settings.nats_url, bucket=nats_names.banned_bucket, clock=clock),
    )
    server = make_server(tokens.ring, max_message_bytes=settings.max_message_bytes,
                         limits=settings.caller_limits(), revocations=composition.revocations,
                         bans=composition.bans)
    await add_health_and_reflection(server, composition.mount(server))
    port = bind(server, settings.listen)
    await server.start()
    own = f"{_loopback(settings.listen)}:{port}"
    await composition.start(own if "game" in names else (settings.game_target or ""))
    if settings.metrics_port:
        serve_metrics(settings.metrics_port, settings.metrics_host)
    console = await _start_console(settings, names, tokens, own) if CONSOLE in names else None
    settle_collector()
    print(banner(settings, names, port, tokens), flush=True)
    if console is not None:
        print(f"  console: http://{_loopback(settings.console_listen)}:{console.port}/ "
              "(sign in with the admin token)", flush=True)
    log.info("serving", port=port, services=names)

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("stopping")
        if console is not None:
            await console.stop()
        await server.stop(grace=2.0)
        await composition.stop()
        if relay_task is not None:
            relay_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await relay_task
        await bus.close()
        if lobby_store is not None:
            await asyncio.to_thread(lobby_store.close)
        if tournament_store is not None:
            await asyncio.to_thread(tournament_store.close)
        if stats_store is not None:
            await asyncio.to_thread(stats_store.close)
        if accounts_store is not None:
            await asyncio.to_thread(accounts_store.close)
        if moderation_store is not None:
            await asyncio.to_thread(moderation_store.close)
        if chat_store is not None:
            await asyncio.to_thread(chat_store.close)
        if store is not None:
            await asyncio.to_thread(store.close)


def main() -> None:
    """``python -m services.compose``: serve with settings from the ``DAST_*`` environment."""
    try:
        asyncio.run(run(load_settings()))
    except ValueError as exc:
        print(f"dast: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


if __name__ == "__main__":
    main()
