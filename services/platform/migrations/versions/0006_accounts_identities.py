"""The accounts service's linked identities: an identity provider's name and the person's
``sub`` there, and the player it signs in (one player per identity, one identity of each
provider per player).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``accounts_identities``."""
    op.create_table(
        "accounts_identities",
        sa.Column("provider", sa.String(32), primary_key=True),
        sa.Column("subject", sa.String(255), primary_key=True),
        sa.Column("player_id", sa.String(64), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("linked_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_accounts_identities_player_provider", "accounts_identities",
                    ["player_id", "provider"], unique=True)


def downgrade() -> None:
    """Drop ``accounts_identities``."""
    op.drop_table("accounts_identities")
