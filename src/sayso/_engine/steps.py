"""`sayso.step`: a side effect in a tool (or a workflow node) that runs once for the run, however often its body runs.

The rule and its journal are the core's (`_core/steps.py`); this is the public call, which finds
the body's steps: a tool's in its `RunDeps` by the tool call's id, a node's on its
`WorkflowContext`. See docs/guides/side-effects.md.

A tool's steps are told apart by the id of the call, so the model's replies they depend on are
kept first (`_engine/replies.py`), for a segment redone after a crash to meet the same calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

from pydantic_ai import RunContext

from .._core.steps import SteppingContext
from ..exceptions import UsageError
from .deps import RunDeps

T = TypeVar("T")


@overload
async def step(
    ctx: RunContext[Any] | SteppingContext,
    name: str,
    fn: Callable[..., Awaitable[T]],
    /,
    *args: Any,
    idempotent: bool = False,
    **kwargs: Any,
) -> T: ...


@overload
async def step(
    ctx: RunContext[Any] | SteppingContext,
    name: str,
    fn: Callable[..., T],
    /,
    *args: Any,
    idempotent: bool = False,
    **kwargs: Any,
) -> T: ...


async def step(
    ctx: RunContext[Any] | SteppingContext,
    name: str,
    fn: Callable[..., Any],
    /,
    *args: Any,
    idempotent: bool = False,
    **kwargs: Any,
) -> Any:
    """Run `fn(*args, **kwargs)` once for the run, as the step `name`; later runs of the body get its result back.

    A tool that asks for approval from its body (`require_approval`), or a node that asks for
    input (`RequestInput`), runs again from the top when the run resumes, in whatever process
    resumes it. What it did before asking is done again — unless it is a step:

    ```python
    async def refund(ctx: RunContext[RunDeps], order_id: str) -> str:
        receipt = await sayso.step(ctx, "charge", payments.refund, order_id)  # once, whatever happens next
        require_approval(ctx, hint=f"Email {receipt} to the customer?")
        return f"refunded: {receipt}"
    ```

    The first run calls `fn` (awaiting a coroutine function, running a plain one in a worker
    thread, as pydantic-ai runs plain tools) and records its result
    with the run, as JSON; each later run of the same body returns the recorded result without
    calling `fn`. The result is returned as recorded every time, validated into `fn`'s return
    annotation (a pydantic model comes back a model; with no annotation, plain JSON).

    Steps are told apart by the tool call (or the node and its pass through the graph), the name
    and how many steps of that name the body took before: take them in the same order each run.

    Args:
        ctx: the tool's `RunContext` or the node's `WorkflowContext`.
        name: what the step does (`"charge"`), unique enough to read in the store.
        fn: the function to run once.
        *args: its positional arguments.
        **kwargs: its keyword arguments (`idempotent` is the step's own).
        idempotent: running it twice is harmless, so a step cut off mid-way (its process killed)
            runs again instead of raising `StepOutcomeUnknown`.

    Returns:
        What `fn` returned, as recorded.

    Raises:
        StepOutcomeUnknown: the step was cut off mid-way before (its process died while it ran), so it
            may or may not have done its work; it is not run again. Uncaught in a tool, the model reads it.
        UsageError: not inside a tool call or a node, or `fn`'s result cannot be stored as JSON (the step
            counts as done; later runs raise the same error).
        Exception: whatever `fn` raised; the step is not recorded, so a later run of the body runs it again.
    """
    if isinstance(ctx, RunContext):
        deps = ctx.deps
        if not isinstance(deps, RunDeps) or ctx.tool_call_id is None:
            raise UsageError("sayso.step runs inside a tool call of a sayso agent (its ctx.deps is sayso's RunDeps)")
        if deps.replies is not None:
            await deps.replies.keep(ctx.messages)  # first: a redo must meet this call again, with its steps
        return await deps.steps_of(ctx.tool_call_id).run(name, fn, args, kwargs, idempotent=idempotent)
    stepping = getattr(ctx, "step", None)
    if stepping is None:
        raise UsageError(f"sayso.step takes a tool's RunContext or a workflow node's WorkflowContext, not {ctx!r}")
    return await stepping(name, fn, *args, idempotent=idempotent, **kwargs)
