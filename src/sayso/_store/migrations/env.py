"""Alembic environment: sayso runs migrations itself on a connection it hands over in `attributes`."""

from __future__ import annotations

from alembic import context

from sayso._store._tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
