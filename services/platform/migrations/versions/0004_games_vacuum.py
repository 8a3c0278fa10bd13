"""Vacuum ``games`` by the rows its appends leave dead, not by the size of the table.

Every append rewrites its game's row, and the relay's partial index (``relayed_seq <
last_seq``) names the column an append changes, so no append's update can be HOT: each one
leaves a dead row and dead index entries behind. PostgreSQL's default vacuums a table once a
fifth of it is dead, so with most games long finished a large ``games`` table would pile up
millions of dead rows before its first vacuum, and every head read and relay claim would
wade through them (a development server without autovacuum held 3.2 million for 31,000
games). Here autovacuum takes the table every 10,000 dead rows whatever its size; its pages
of finished games stay all-visible and are skipped, so each pass is short.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SETTINGS = {
    "autovacuum_vacuum_scale_factor": "0",
    "autovacuum_vacuum_threshold": "10000",
    "autovacuum_analyze_scale_factor": "0",
    "autovacuum_analyze_threshold": "10000",
}


def upgrade() -> None:
    """Set ``games``' autovacuum thresholds to a fixed number of rows."""
    settings = ", ".join(f"{name} = {value}" for name, value in SETTINGS.items())
    op.execute(f"ALTER TABLE games SET ({settings})")


def downgrade() -> None:
    """Give ``games`` the server's autovacuum thresholds again."""
    op.execute(f"ALTER TABLE games RESET ({', '.join(SETTINGS)})")
