"""Runs whose client tools were stored with parameters that are no JSON object are made readable again.

Before the start verb checked client tools (`_core/client_tools.py`), AG-UI stored a tool's
`parameters` as the client sent them: a string, a number, a list. Such a run could not be read
back, so its thread, its requests and every interface showing them failed for good. Each such
tool's parameters become `{"type": "object"}` (a tool taking no arguments the schema names), which
is all that can be said of them; the rest of the run is left as it was.

Revision ID: 0021_repair_client_tools
Revises: 0020_decision_closed
Create Date: 2026-12-06
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0021_repair_client_tools"
down_revision = "0020_decision_closed"
branch_labels = None
depends_on = None

_BATCH = 500
"""Runs read at once while looking for unreadable client tools."""


def _repaired(raw: bytes) -> bytes | None:
    """The stored tools with every non-object `parameters` replaced, or `None` when none needed it."""
    try:
        tools: Any = json.loads(raw)
    except ValueError:
        return None  # not JSON at all: nothing sayso wrote, and nothing this revision can mend
    if not isinstance(tools, list):
        return None
    changed = False
    for tool in tools:
        if isinstance(tool, dict) and not isinstance(tool.get("parameters", {}), dict):
            tool["parameters"] = {"type": "object"}
            changed = True
    return json.dumps(tools, separators=(",", ":")).encode() if changed else None


def upgrade() -> None:
    runs = sa.table("runs", sa.column("run_id"), sa.column("client_tools"))
    conn = op.get_bind()
    after = ""
    while True:
        rows = conn.execute(
            sa.select(runs.c.run_id, runs.c.client_tools)
            .where(runs.c.client_tools.is_not(None), runs.c.run_id > after)
            .order_by(runs.c.run_id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        for run_id, raw in rows:
            fixed = _repaired(bytes(raw))
            if fixed is not None:
                conn.execute(runs.update().where(runs.c.run_id == run_id).values(client_tools=fixed))
        after = rows[-1][0]


def downgrade() -> None:
    """Nothing to undo: the parameters replaced could not be read before."""
