"""The runtime holding a running run's lease is its *holder*: `runs.lease_owner` becomes `runs.lease_holder`.

"Owner" names the principal a thread belongs to; the process working on a run only holds it for a
while. The rename keeps every value, so runs written before it read as they were.

Revision ID: 0013_lease_holder
Revises: 0012_lean_sweeps
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0013_lease_holder"
down_revision = "0012_lean_sweeps"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.alter_column("lease_owner", new_column_name="lease_holder")


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.alter_column("lease_holder", new_column_name="lease_owner")
