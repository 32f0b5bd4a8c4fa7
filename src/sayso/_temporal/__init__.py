"""The Temporal executor: each sayso run a Temporal workflow, worked on by `sayso worker` processes.

See docs/guides/temporal.md. `front` is what a `sayso serve` (or any `Sayso`) with `engine: temporal`
uses to hand runs and decisions to the cluster; `run_worker` is `sayso worker`. Nothing outside
this package imports `temporalio`, and this package is imported only for a config that names it.
"""

from __future__ import annotations

from .._config.file import Config
from ._front import TemporalFront
from ._worker import check_buildable, run_worker

__all__ = ["TemporalFront", "front", "run_worker"]


def front(config: Config) -> TemporalFront:
    """The engine of a front process for `config`'s `engine: temporal` (it connects on first use).

    Raises:
        ConfigError: the config holds what workers cannot run (`check_buildable`).
    """
    assert config.engine.temporal is not None
    check_buildable(config)
    return TemporalFront(config.engine.temporal)
