"""Settings of every dast process, read from ``DAST_*`` environment variables.

With no environment at all the defaults give the embedded backend: a SQLite file under
``DAST_DATA_DIR``, the in-process bus, one gRPC port on loopback, and the token keys and
log-signing key made under the data dir (the start-up banner prints an admin token). As
soon as a database URL or a NATS URL is set the process is part of a deployment, and
:meth:`Settings.check_secrets` refuses to serve without ``DAST_TOKEN_KEYS`` and a
``DAST_SIGNING_KEY``, nor with a key published in dast's repository (an example, a
former default: :mod:`services.platform.published_secrets`);
:func:`services.platform.token_keys.load_token_keys` checks the token keys.
``DAST_JWT_SECRET`` is refused: the HMAC secret every process shared is gone (any replica
could mint admin tokens with it). ``DAST_DEPLOYMENT`` names the deployment, and through it
every NATS name it uses (:mod:`services.platform.nats_names`). URLs shown in banners and
logs go through :func:`masked_url`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.platform.limits import CallerLimits, parse_networks
from services.platform.nats_names import DEFAULT_DEPLOYMENT, NatsNames, deployment_problem

MAKE_SIGNING_KEY_HINT: Final = (
    'make one with: python -c "import base64, os; print(base64.b64encode(os.urandom(32)).decode())"'
)
RETIRED_SETTINGS: Final = (
    "DAST_NATS_STREAM", "DAST_NATS_SUBJECT_PREFIX", "DAST_NATS_TABLES_STREAM",
    "DAST_NATS_TABLES_PREFIX",
)
"""Settings that named NATS streams one by one; ``DAST_DEPLOYMENT`` names them all now, and
a process refuses to start with one of these rather than silently use other streams."""
REPLACED_SETTINGS: Final = {
    "DAST_JWT_SECRET": (
        "DAST_JWT_SECRET is no longer read: tokens are signed with Ed25519 keys that only "
        "their issuing service holds; give every process DAST_TOKEN_KEYS (the public keys) "
        "and each service its own DAST_TOKEN_SIGNING_KEYS, then unset DAST_JWT_SECRET "
        "(docs/deploy.md \"Token keys\")"
    ),
}
"""Settings another replaced, and what to set instead: refused rather than ignored."""


_LIMITS: Final = CallerLimits()
"""The defaults of the ``DAST_LIMIT_*`` settings added with the process budgets."""


class ConfigError(ValueError):
    """Raised when the settings are unsafe to serve with; the message says how to fix them."""


def masked_url(url: str) -> str:
    """``url`` with its password (or a NATS token) replaced by ``***``; a comma-separated
    list of NATS servers is masked server by server.

    >>> masked_url("postgresql+psycopg://dast:s3cret@db:5432/dast")
    'postgresql+psycopg://dast:***@db:5432/dast'
    >>> masked_url("nats://tok3n@a:4222,nats://u:p@b:4222")
    'nats://***@a:4222,nats://u:***@b:4222'
    """
    if "," in url:
        return ",".join(masked_url(part) for part in url.split(","))
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return "<unparsable URL>"
    if user is None and password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    if password is not None:
        userinfo = f"{user}:***"
    elif parts.scheme.startswith(("nats", "tls", "ws")):
        userinfo = "***"  # nats://TOKEN@host: the user part is the secret
    else:
        return url
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))


class Settings(BaseSettings):
    """Configuration of a dast process (``DAST_<FIELD>`` in the environment)."""

    model_config = SettingsConfigDict(env_prefix="DAST_", extra="ignore")

    listen: str = "127.0.0.1:50051"
    """host:port of the gRPC server (``0.0.0.0:50051`` in containers)."""
    database_url: str | None = None
    """SQLAlchemy URL of the event store; None: SQLite under ``data_dir``."""
    nats_url: str | None = None
    """NATS server URL; None: the in-process bus (one process only)."""
    deployment: str = DEFAULT_DEPLOYMENT
    """The deployment's name, which every NATS stream, subject and bucket it uses carries
    (:mod:`services.platform.nats_names`): deployments sharing a NATS server each need
    their own. The default keeps the names of deployments made before it existed."""
    game_target: str | None = None
    """Where a process without the game service reaches it (the lobby, the bots): a gRPC
    target such as ``127.0.0.1:50051`` or, for several replicas balanced by the client,
    ``ipv4:127.0.0.1:50061,127.0.0.1:50062``. None: the game service of this process."""
    token_keys: str | None = None
    """The public keys every server verifies bearer tokens with, and the roles each may
    sign: a JSON document or a file's path (:mod:`services.platform.token_keys`); required
    outside the embedded mode, which makes its own under ``data_dir``."""
    token_signing_keys: str | None = None
    """The private keys of the services this process runs, one per issuing service: a JSON
    document or a file's path (:mod:`services.platform.token_keys`); none for the game
    service."""
    signing_key: str | None = None
    """Ed25519 key sealing finished logs: base64 of its 32-byte seed, or a PEM file's path
    (:mod:`services.platform.keys`); None: made under ``data_dir`` (embedded mode only)."""
    data_dir: Path = Path(".dast")
    metrics_port: int = 0
    """Port of the Prometheus HTTP endpoint; 0: no endpoint."""
    metrics_host: str = "127.0.0.1"
    services: str = "all"
    """Comma-separated services this process runs: all, or some of game, lobby, bot,
    tournament, stats, accounts; and ``console`` (``all,console`` is what ``make run``
    serves), which "all" leaves out."""
    console_listen: str = "127.0.0.1:8090"
    """host:port of the operator console's HTTP server (``console`` in the services)."""
    console_targets: str = ""
    """Where the console reaches each service: ``game=host:port;lobby=host:port;…``
    (services/console/backend.py); a service left out is reached at this process's own
    gRPC address when it serves any, else at ``DAST_GAME_TARGET``."""
    max_message_bytes: int = Field(default=64 * 1024, ge=1024)
    """Largest request accepted; bigger ones get RESOURCE_EXHAUSTED."""
    log_level: str = "info"
    log_json: bool = True
    token_ttl_seconds: int = 24 * 3600
    """Lifetime of the tokens of the lobby's device sign-in (``lobby_device_sign_in``)."""
    lobby_device_sign_in: bool = False
    """Whether the lobby's ``SignInGuest`` still signs a device in by its id alone (the
    device id is then the whole credential). Off: it refuses every call
    (``device_sign_in_retired``) and apps sign in through ``AccountsService``. Only tests
    and tools embedding the backend for themselves turn it on."""
    oidc_providers: str = ""
    """The OpenID Connect providers whose ID tokens sign players in: a JSON list of objects
    (name, issuer, audiences, jwks_url or static_keys), read by
    :func:`services.accounts.oidc_providers.parse_providers` (docs/accounts.md "Identity
    providers"); empty: none."""
    access_token_minutes: int = Field(default=15, ge=1, le=24 * 60)
    """Lifetime of the access tokens the accounts service issues (a session's refresh
    token renews them)."""
    access_token_seconds: int = Field(default=0, ge=0, le=24 * 3600)
    """When not 0, the access tokens' lifetime in seconds instead of
    ``access_token_minutes`` (tests and demonstrations of a token expiring mid-match)."""
    refresh_token_days: int = Field(default=30, ge=1, le=365)
    """Lifetime of a refresh token: a session unused for longer ends."""
    chat_retention_days: float = Field(default=7.0, gt=0, le=3650)
    """How long the tables' talk is kept (the age of the deployment's chat stream in
    JetStream; in memory in the embedded mode)."""
    chat_max_chars: int = Field(default=200, ge=1, le=256)
    """Longest message of free text, counted after cleaning."""
    chat_messages_per_window: int = Field(default=5, ge=1)
    """Messages one player may send to tables in one window..."""
    chat_window_seconds: float = Field(default=10.0, gt=0)
    """...of this many seconds."""
    report_retention_days: float = Field(default=90.0, gt=0, le=3650)
    """How long players' reports are kept for operators."""
    guest_idle_days: float = Field(default=10.0, gt=0, le=3650)
    """A guest (a player of the accounts service with no identity linked) who has not
    signed in for this long is erased as a deleted account is."""
    presence_grace_seconds: float = 15.0
    """How long a player's game stream may be gone before a bot takes the seat (and how
    long a tournament player may take to open a stream on a new match: docs/tournaments.md
    "Absent players")."""
    presence_heartbeat_seconds: float = Field(default=5.0, gt=0)
    """How often a game replica reports its players' streams to the presence board; a
    replica silent for three periods counts as gone (its streams with it)."""
    tournament_creators: Literal["anyone", "accounts", "operators"] = "anyone"
    """Who may create tournaments: every player, guests included (``anyone``); players
    signed in with an account, not guests (``accounts``); admin and service tokens only
    (``operators``). services/tournament/policy.py."""
    tournament_open_per_player: int = Field(default=2, ge=1)
    """Open (registering or running) tournaments one player may host at once; operators
    have no limit."""
    limit_streams_per_player: int = Field(default=32, ge=1)
    """Open game and table streams one player may hold on one process (limits.py)."""
    limit_calls_per_second: float = Field(default=50.0, gt=0)
    """Calls per second one player may make to one method, sustained..."""
    limit_call_burst: int = Field(default=100, ge=1)
    """...and at once (a token bucket)."""
    limit_service_calls_per_second: float = Field(default=10_000.0, gt=0)
    """The same for one service or admin token (bots act for every bot seat)."""
    limit_service_call_burst: int = Field(default=20_000, ge=1)
    limit_sign_ins_per_minute_per_device: int = Field(default=10, ge=1)
    limit_sign_ins_per_minute_per_address: int = Field(default=60, ge=1)
    limit_streams_per_process: int = Field(default=_LIMITS.streams_per_process, ge=1)
    """Open streams of players and guests on one process, all together (limits.py and
    docs/security.md "Limits per process and per address" say why this default)."""
    limit_spectator_share: float = Field(default=_LIMITS.spectator_share, gt=0, le=1)
    """Of those (and of an address's share), what spectators may hold; the rest stays for
    players' own streams."""
    limit_spectators_per_game: int = Field(default=_LIMITS.spectators_per_game, ge=1)
    """Spectator streams of one match (or onlookers of one table) on one process."""
    limit_calls_in_flight: int = Field(default=_LIMITS.calls_in_flight, ge=1)
    """Unary calls of players and guests handled at once on one process."""
    limit_address_share: float = Field(default=_LIMITS.address_share, gt=0, le=1)
    """Of each process budget, what one client address may hold."""
    trusted_proxies: str = ""
    """Comma-separated networks (CIDR) of the proxies in front of the server whose
    ``x-forwarded-for`` names the client address; empty: the peer address is the client's."""

    def store_url(self) -> str:
        """The event store URL, defaulting to a SQLite file under the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'dast.db').resolve()}"

    def caller_limits(self) -> CallerLimits:
        """The per-caller limits of the gRPC server (the ``DAST_LIMIT_*`` settings)."""
        return CallerLimits(
            streams_per_player=self.limit_streams_per_player,
            calls_per_second=self.limit_calls_per_second,
            call_burst=self.limit_call_burst,
            service_calls_per_second=self.limit_service_calls_per_second,
            service_call_burst=self.limit_service_call_burst,
            sign_ins_per_minute_per_device=self.limit_sign_ins_per_minute_per_device,
            sign_ins_per_minute_per_address=self.limit_sign_ins_per_minute_per_address,
            streams_per_process=self.limit_streams_per_process,
            spectator_share=self.limit_spectator_share,
            spectators_per_game=self.limit_spectators_per_game,
            calls_in_flight=self.limit_calls_in_flight,
            address_share=self.limit_address_share,
            trusted_proxies=self.proxy_networks(),
        )

    def proxy_networks(self) -> tuple[str, ...]:
        """The networks of ``DAST_TRUSTED_PROXIES``, one per entry."""
        return tuple(part.strip() for part in self.trusted_proxies.split(",") if part.strip())

    def nats_names(self) -> NatsNames:
        """Every NATS stream, subject and bucket of this deployment."""
        return NatsNames(self.deployment)

    def is_embedded(self) -> bool:
        """Whether this is the single-process embedded backend (no database or NATS URL)."""
        return not self.database_url and not self.nats_url

    @field_validator("deployment")
    @classmethod
    def _deployment_is_a_name(cls, value: str) -> str:
        problem = deployment_problem(value)
        if problem is not None:
            raise ValueError(f"DAST_DEPLOYMENT {problem}")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_networks(cls, value: str) -> str:
        parse_networks(part for part in value.split(",") if part.strip())
        return value

    def check_secrets(self) -> None:
        """Refuse to serve a deployment on defaulted secrets.

        :raises ConfigError: outside the embedded mode, when ``DAST_TOKEN_KEYS`` or
            ``DAST_SIGNING_KEY`` is unset. (:func:`services.platform.keys.load_signer`
            refuses a published signing key, and
            :func:`services.platform.token_keys.load_token_keys` token keys that are
            malformed, published or not this process's.)
        """
        if self.is_embedded():
            return
        problems = []
        if not self.token_keys:
            problems.append(
                "DAST_TOKEN_KEYS is unset: every process needs the public keys that verify "
                "bearer tokens; make them with: python -m services.platform.token_keys "
                "ISSUER... (docs/deploy.md \"Token keys\")"
            )
        if not self.signing_key:
            problems.append(
                "DAST_SIGNING_KEY is unset: every replica must seal logs with the same key; "
                + MAKE_SIGNING_KEY_HINT
            )
        if problems:
            raise ConfigError(
                "refusing to start outside the embedded mode (a database or NATS URL is "
                "set): " + "; ".join(problems)
            )


def load_settings(**overrides: object) -> Settings:
    """The settings from the environment, with ``overrides`` on top.

    :raises ConfigError: naming every invalid setting, without pydantic's noise, or a
        retired setting found in the environment.
    """
    check_retired_settings(os.environ)
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from None


def check_retired_settings(environment: Mapping[str, str]) -> None:
    """Refuse an environment that sets one of :data:`RETIRED_SETTINGS`.

    :raises ConfigError: naming them, and ``DAST_DEPLOYMENT`` instead.
    """
    replaced = [REPLACED_SETTINGS[name] for name in REPLACED_SETTINGS if name in environment]
    if replaced:
        raise ConfigError("; ".join(replaced))
    found = [name for name in RETIRED_SETTINGS if name in environment]
    if found:
        raise ConfigError(
            f"{', '.join(found)} no longer exist: DAST_DEPLOYMENT names every NATS stream, "
            "subject and bucket of a deployment (unset: 'dast', the former default names); "
            "docs/deploy.md \"Several deployments on one NATS\""
        )
