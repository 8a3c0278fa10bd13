"""Settings of every dast process, read from ``DAST_*`` environment variables.

With no environment at all the defaults give the embedded backend: a SQLite file under
``DAST_DATA_DIR``, the in-process bus, one gRPC port on loopback, and a development JWT
secret (logged as a warning: production must set ``DAST_JWT_SECRET``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEV_JWT_SECRET: Final = "dast-dev-secret-change-me-in-production-0123456789"
"""The secret used when ``DAST_JWT_SECRET`` is unset; fine on a laptop, never in production."""


class Settings(BaseSettings):
    """Configuration of a dast process (``DAST_<FIELD>`` in the environment)."""

    model_config = SettingsConfigDict(env_prefix="DAST_", extra="ignore")

    listen: str = "127.0.0.1:50051"
    """host:port of the gRPC server (``0.0.0.0:50051`` in containers)."""
    database_url: str | None = None
    """SQLAlchemy URL of the event store; None: SQLite under ``data_dir``."""
    nats_url: str | None = None
    """NATS server URL; None: the in-process bus (one process only)."""
    jwt_secret: str = DEV_JWT_SECRET
    data_dir: Path = Path(".dast")
    metrics_port: int = 0
    """Port of the Prometheus HTTP endpoint; 0: no endpoint."""
    metrics_host: str = "127.0.0.1"
    services: str = "all"
    """Comma-separated services this process runs: all, or some of game, lobby, bot."""
    max_message_bytes: int = Field(default=64 * 1024, ge=1024)
    """Largest request accepted; bigger ones get RESOURCE_EXHAUSTED."""
    log_level: str = "info"
    log_json: bool = True
    token_ttl_seconds: int = 24 * 3600
    presence_grace_seconds: float = 15.0
    """How long a player's game stream may be gone before a bot takes the seat."""

    def store_url(self) -> str:
        """The event store URL, defaulting to a SQLite file under the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'dast.db').resolve()}"

    def uses_dev_secret(self) -> bool:
        """Whether the JWT secret is the public development one."""
        return self.jwt_secret == DEV_JWT_SECRET
