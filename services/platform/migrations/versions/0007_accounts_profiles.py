"""The accounts service's profiles: a player's avatar id and locale beside the display name
(both "" for the players stored before, as for a player who has chosen none).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``avatar_id`` and ``locale`` to ``accounts_players``."""
    op.add_column("accounts_players",
                  sa.Column("avatar_id", sa.String(64), nullable=False, server_default=""))
    op.add_column("accounts_players",
                  sa.Column("locale", sa.String(16), nullable=False, server_default=""))


def downgrade() -> None:
    """Drop the profile columns of ``accounts_players``."""
    op.drop_column("accounts_players", "locale")
    op.drop_column("accounts_players", "avatar_id")
