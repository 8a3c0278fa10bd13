"""The accounts service's tables: players, devices, sessions and refresh tokens.

The accounts service owns them (``services/accounts/store.py`` has the same tables as
models, from which SQLite files get them); every name starts with ``accounts_``. Secrets
are stored only as SHA-256 digests.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the ``accounts_`` tables."""
    op.create_table(
        "accounts_players",
        sa.Column("player_id", sa.String(64), primary_key=True),
        sa.Column("display_name", sa.String(64), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "accounts_devices",
        sa.Column("device_id", sa.String(128), primary_key=True),
        sa.Column("player_id", sa.String(64), nullable=False),
        sa.Column("secret_digest", sa.LargeBinary(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_accounts_devices_player", "accounts_devices", ["player_id"])
    op.create_table(
        "accounts_sessions",
        sa.Column("session_id", sa.String(32), primary_key=True),
        sa.Column("player_id", sa.String(64), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("ended_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_accounts_sessions_player", "accounts_sessions", ["player_id"])
    op.create_table(
        "accounts_refresh_tokens",
        sa.Column("token_digest", sa.LargeBinary(), primary_key=True),
        sa.Column("session_id", sa.String(32), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.Column("spent_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_accounts_refresh_tokens_session", "accounts_refresh_tokens",
                    ["session_id"])


def downgrade() -> None:
    """Drop the ``accounts_`` tables."""
    op.drop_table("accounts_refresh_tokens")
    op.drop_table("accounts_sessions")
    op.drop_table("accounts_devices")
    op.drop_table("accounts_players")
