"""Where runs do their work: in the process that serves them, or on a Temporal cluster's workers.

See docs/guides/temporal.md.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    # Field docstrings are read by docs/hooks/config_reference.py, not at load (that cost every command ~0.1 s).
    model_config = ConfigDict(extra="forbid")


class TemporalConfig(_Strict):
    """The Temporal cluster sayso's runs are workflows on (`pip install 'sayso[temporal]'`)."""

    address: str = "localhost:7233"
    """The frontend of the cluster, `host:port`."""
    namespace: str = "default"
    """The Temporal namespace the runs' workflows live in."""
    task_queue: str = Field(default="sayso", min_length=1)
    """The task queue `sayso worker` polls and `sayso serve` starts workflows on."""
    heartbeat_seconds: float = Field(default=10.0, gt=0, le=600)
    """How long a worker may go silent before Temporal gives its segment to another worker."""
    accept_seconds: float = Field(default=30.0, gt=0, le=600)
    """How long a front waits for a worker to take up a run it starts or a decision it sends before it answers that
    none did (HTTP 503, exit 5); a decision sent so may still be recorded when a worker polls the task queue."""


class EngineConfig(_Strict):
    """The `engine:` section: unset, every process runs the runs it starts or resumes itself."""

    temporal: TemporalConfig | None = None
    """Run every run as a Temporal workflow on `sayso worker` processes; `sayso serve` is then a stateless front."""
