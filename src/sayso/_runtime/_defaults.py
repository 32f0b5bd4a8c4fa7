"""The adapters the runtime falls back on when its caller passes none, filled in by the package root.

The runtime defines the ports and the protocol packages implement them; neither may import the other. These
lists are where the two meet without either importing the other: the package root (the composition root) fills
them. The runner of workflows' runs is joined the same way, so the cycle of a config without workflows never
loads the workflow engine or its host. Importing this module loads nothing else of the runtime (its package
resolves its names lazily), so `import sayso` and `sayso --help` stay instant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._config.file import Config
    from ._kernel import Kernel
    from ._remote_port import RemoteAgents
    from ._runner import Engine, Runs, WorkflowRuns

    WorkflowRunnerOf = Callable[[Kernel, Runs], WorkflowRuns]
    """How the cycle gets the runner of workflows' runs: from the runtime's kernel and the cycle's runs below."""

DEFAULT_REMOTE_AGENTS: list[Callable[[Config], RemoteAgents]] = []
"""Factories of the A2A client remote delegates go through (for the config naming them); the last one wins."""

ENGINES: dict[str, Callable[[Config], Engine]] = {}
"""Factories of the engines a config's `engine:` names (`temporal`), filled by the package root."""


def engine_of(config: Config) -> Engine | None:
    """The engine `config` names, or `None` when its runs do their work in the process that serves them.

    Raises:
        ConfigError: the config names an engine this installation lacks.
    """
    if config.engine.temporal is None:
        return None
    factory = ENGINES.get("temporal")
    if factory is None:
        from ..exceptions import ConfigError

        raise ConfigError("engine: temporal needs the Temporal extra: pip install 'sayso[temporal]'")
    return factory(config)


WORKFLOW_RUNNERS: list[WorkflowRunnerOf] = []
"""Factories of the runner of workflows' runs (`_workflows.workflow_runner`), filled by the package root; the last
one wins. A config without workflows never calls one, so a runtime of agents alone loads no workflow engine."""


def workflow_runner_of(config: Config) -> WorkflowRunnerOf | None:
    """How the cycle builds `config`'s workflows' runner, or `None` when it has no workflows."""
    if not config.workflows:
        return None
    return WORKFLOW_RUNNERS[-1]
