"""Before-call hooks: one function per agent that runs before every tool call and may pause it.

See docs/guides/mcp.md#pausing-from-a-hook.

A rule that concerns every tool (sign in to the CRM first; a second pair of eyes on Fridays)
lives in one place instead of inside each tool. The hook sees the call (`HookCall`) and returns
`None` to let it run, `AskApproval` to wait for a person's approval, or `VisitUrl` to send the
person to a page (a login, say) and wait until they say done. Either pause is an ordinary
request (`approval`, or an `elicitation` in URL mode), answered on every interface and durable
like any other. On resume the hook runs again before the call, seeing what the person did
(`approved`, `visited`), and may let the call run or pause it once more.

Declare it in the config (`before_tool_call: pkg.mod:fn`) or from Python, on the agent's config
or with the runtime's decorator:

```python
@app.before_tool_call("crm")
async def sign_in_first(call: HookCall) -> VisitUrl | None:
    if not await crm.signed_in(call.principal):
        return VisitUrl(message="Sign in to the CRM first", url=crm.login_url(call.principal))
    return None
```
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._core.decisions import Accept
from ..exceptions import UsageError
from .calls import (
    ApprovalDeferral,
    CallApproved,
    Elicitation,
    ElicitationAnswered,
    ElicitationDeferral,
    approved_call_of,
)
from .deps import RunDeps


@dataclass(frozen=True, kw_only=True)
class HookCall:
    """A tool call about to run, as a before-call hook sees it."""

    tool_name: str
    args: dict[str, Any] = field(default_factory=dict)
    """The arguments the call will run with (the person's edits, when they edited)."""
    agent_path: str
    """Which agent makes the call: `coordinator/analyst`."""
    run_id: str
    thread_id: str
    principal: str | None
    """Who the run acts for."""
    approved: bool = False
    """A person approved a request this call raised (the hook's `AskApproval`, or the tool's own)."""
    visited: bool = False
    """A person said done on a page the hook sent them to (`VisitUrl`)."""


@dataclass(frozen=True, kw_only=True)
class AskApproval:
    """Pause the call until a person approves it; a rejection ends it with the person's reason."""

    hint: str
    """Why the person should look, shown on the approval request."""
    payload: Any = None
    """Data shown with the request."""


@dataclass(frozen=True, kw_only=True)
class VisitUrl:
    """Send the person to a page (a login, say); when they say done, the call is tried again."""

    message: str
    """What the person should do there."""
    url: str


HookOutcome: TypeAlias = AskApproval | VisitUrl | None
BeforeToolCall: TypeAlias = Callable[[HookCall], HookOutcome | Awaitable[HookOutcome]]
"""A hook: sync or async, given the call, returning `None` (run it), `AskApproval` or `VisitUrl`."""


def before_tool_call(hook: BeforeToolCall) -> BeforeToolCall:
    """Mark a function as a before-call hook, checking that it takes the call as its one argument.

    The function itself is unchanged; pass it as an agent's `before_tool_call` (or register it
    with `Sayso.before_tool_call`).

    Raises:
        TypeError: the function does not take exactly one argument.
    """
    if not callable(hook):
        raise TypeError(f"a before-call hook must be a function, not {hook!r}")
    try:
        inspect.signature(hook).bind(None)
    except TypeError:
        raise TypeError(f"a before-call hook takes the call as its one argument: {hook!r}") from None
    except ValueError:  # pragma: no cover - builtins without a signature
        pass
    return hook


@dataclass
class HookToolset(WrapperToolset[Any]):
    """Runs the agent's before-call hook ahead of every call of the tools it wraps, and pauses as it says."""

    hook: BeforeToolCall | None = None
    skip: frozenset[str] = frozenset()
    """Tools sayso provides itself (`ask_user`): the hook does not see their calls."""

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if self.hook is not None and name not in self.skip:
            try:
                outcome = self.hook(_hook_call(name, tool_args, ctx))
                if inspect.isawaitable(outcome):
                    outcome = await outcome
            except Exception as exc:
                # The hook's own bug ends the run (the call never runs); it is not the tool's error to read.
                raise UsageError(f"the before-call hook {self.hook!r} raised {type(exc).__name__}: {exc}") from exc
            if isinstance(outcome, AskApproval):
                raise ApprovalRequired(
                    metadata=ApprovalDeferral(hint=outcome.hint, payload=outcome.payload, from_body=True).as_metadata()
                )
            if isinstance(outcome, VisitUrl):
                asked = Elicitation(server=None, mode="url", message=outcome.message, url=outcome.url, delivery="retry")
                raise ApprovalRequired(metadata=ElicitationDeferral(elicitation=asked).as_metadata())
            if outcome is not None:
                raise UsageError(
                    f"the before-call hook {self.hook!r} returned {outcome!r}; return None, AskApproval or VisitUrl"
                )
        return await super().call_tool(name, tool_args, ctx, tool)


def _hook_call(name: str, tool_args: dict[str, Any], ctx: RunContext[Any]) -> HookCall:
    """What the hook sees of a call, including what a person did about the pause it raised before."""
    deps = ctx.deps
    assert isinstance(deps, RunDeps), "sayso runs every agent with its own deps"
    resumed = approved_call_of(ctx.tool_call_metadata) if ctx.tool_call_approved else None
    visited = (
        isinstance(resumed, ElicitationAnswered)
        and resumed.elicitation.server is None
        and isinstance(resumed.answer, Accept)
    )
    return HookCall(
        tool_name=name,
        args=tool_args,
        agent_path=deps.agent_path,
        run_id=deps.run_id,
        thread_id=deps.thread_id,
        principal=deps.principal,
        approved=isinstance(resumed, CallApproved) and resumed.from_body,
        visited=visited,
    )
