"""`sayso worker`: a process that works on runs' workflows — their segments, decisions and timers.

Any number of workers on any machines poll the config's task queue; each is a `Sayso` that runs
every run itself, over the same store as the fronts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta

import anyio
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.worker import Worker

from .._config.file import Config
from .._runtime import Sayso
from .._runtime._cycle import Cycle
from .._runtime._tree import root
from ..exceptions import ConfigError
from ..workflows import Workflow
from ._activities import Activities
from ._durable import Live, durable_agents
from ._loop import LoopAgents, TemporalLoop
from ._shapes import own_queue, workflow_id
from ._steps import TemporalSteps
from ._workflow import DECIDED_SIGNAL, SaysoRun

GRACE = timedelta(seconds=5)
"""How long a stopping worker lets the activities in flight finish before it cancels them."""


async def run_worker(
    config: Config, *, ready: Callable[[str], Awaitable[None]] | None = None, stop: anyio.Event | None = None
) -> None:
    """Work on the runs of `config`'s Temporal task queue until `stop` is set, or until cancelled.

    Once `stop` is set the worker stops gracefully and returns: it takes no more tasks, hands the
    segments that only wait on their loops back at once (letting go of their runs, which another
    worker takes over at once), lets the other activities in flight (a tool call) finish for up to
    `GRACE` (those still running then are cancelled, and Temporal retries them elsewhere or
    records their calls' outcome unknown at once, without a heartbeat timeout), and closes its
    runtime. Cancelling it instead cuts all of that short.

    Args:
        config: a config with `engine: temporal`.
        ready: told, once the worker polls its task queue, where it works.
        stop: set to stop gracefully (`sayso worker` sets it on SIGTERM and Ctrl-C).

    Raises:
        ConfigError: the config names no `engine: temporal`.
    """
    settings = config.engine.temporal
    if settings is None:
        raise ConfigError("sayso worker needs 'engine: {temporal: {address, namespace, task_queue}}' in the config")
    check_buildable(config)
    async with Sayso(config, engine="here") as app:
        # pydantic-ai's payload converter: model messages and run contexts cross as it writes them.
        client = await Client.connect(settings.address, namespace=settings.namespace, plugins=[PydanticAIPlugin()])
        app._cycle.delegates_apart = True  # each delegate's run is a child workflow of its parent's
        k = app._cycle.k
        heartbeat = timedelta(seconds=settings.heartbeat_seconds)
        durable = durable_agents(k.agents, config.agents, heartbeat=heartbeat)
        LoopAgents.agents = durable
        Live.k, Live.runs = k, app._cycle
        loop = TemporalLoop(client, app._cycle, agents=frozenset(durable))
        k.loop = loop
        activities = Activities(app, loop, heartbeat_seconds=settings.heartbeat_seconds)
        # A form an MCP call held here asked is answered here: its resumed call comes to this worker's own queue.
        k.routes_held_calls = True
        if app._holder is not None:
            app._holder.carry_on = carry_on_there(client, app._cycle)
        # The steps of the bodies this process runs, and the calls it holds, are activities on a queue only it polls.
        steps = TemporalSteps(
            client,
            app._cycle,
            queue=own_queue(settings.task_queue, k.holder),
            heartbeat_seconds=settings.heartbeat_seconds,
        )
        k.journal.through = steps
        worker = Worker(
            client,
            task_queue=settings.task_queue,
            workflows=[SaysoRun],
            activities=activities.all(),
            plugins=[AgentPlugin(agent) for agent in durable.values()],
            graceful_shutdown_timeout=GRACE,
            # A dead worker's runs move to another worker as soon as it would take over a segment.
            sticky_queue_schedule_to_start_timeout=timedelta(seconds=settings.heartbeat_seconds),
        )
        own = Worker(
            client,
            task_queue=steps.queue,
            activities=[steps.run_here],
            plugins=[AgentPlugin(agent) for agent in durable.values()],
            graceful_shutdown_timeout=GRACE,
        )
        async with worker, own:
            if ready is not None:
                await ready(f"working on task queue {settings.task_queue!r} at {settings.address}")
            await (stop if stop is not None else anyio.Event()).wait()  # an event nobody sets: until cancelled
            # The segments that only wait on their loops go back to Temporal at once, their leases let go of.
            loop.hand_back()
            # Both at once, so a stop takes one grace, not one per worker; leaving the block then waits no more.
            async with anyio.create_task_group() as stopping:
                stopping.start_soon(worker.shutdown)
                stopping.start_soon(own.shutdown)


def carry_on_there(client: Client, cycle: Cycle) -> Callable[[str], Awaitable[None]]:
    """How a closing worker carries on a run whose held forms it closed: its workflow does, on whichever worker.

    A signal, not an Update: the cluster keeps it even when no worker polls (this was the last one, and
    it is stopping), and the workflow carries the run on once a worker is back. An Update waited for a
    worker to accept it, which none could, and its timeout ended the stopping worker with a traceback.
    """

    async def carry_on(run_id: str) -> None:
        k = cycle.k
        top = await root(k, await k.store.get_run(run_id))
        with contextlib.suppress(RPCError):  # its workflow ended already
            await client.get_workflow_handle(workflow_id(top)).signal(DECIDED_SIGNAL, run_id)

    return carry_on


def check_buildable(config: Config) -> None:
    """Refuse, before anything runs, what a worker cannot run durably: a graph's agent node given as an `Agent` object.

    A worker builds each agent's loop for Temporal from the agent's entry under `agents:` (its model,
    instructions, tools and delegates, under pydantic-ai's `TemporalDurability`, which an agent takes
    when it is built); a pydantic-ai `Agent` handed to a node is an object of one process, with its
    own instructions, output type and capabilities, which no worker can rebuild. Fronts check it too,
    so such a run never starts and waits on workers that cannot take it.

    Raises:
        ConfigError: naming the workflow and the node.
    """
    for name, workflow in config.workflows.items():
        if not isinstance(workflow, Workflow):
            continue  # a YAML graph's agent nodes name configured agents
        for node in workflow.agent_nodes:
            given = workflow.nodes[node].agent
            if given is not None and not isinstance(given.agent, str):
                raise ConfigError(
                    f"workflow {name!r}: node {node!r} runs a pydantic-ai Agent object, which cannot run on Temporal "
                    "(engine: temporal): workers build each agent's durable loop from its entry under 'agents:'; "
                    "configure the agent there and name it in the node (AgentNode('NAME'))"
                )
