"""What the core's decision and thread rules need to know of this runtime, gathered before the transaction.

The rules themselves are pure and live once in `_core/deciding.py` (who may decide, votes, an edit
keeping its subject, the grant an approval creates, held forms) and `_core/starting.py` (who may
message a thread). The store applies them inside its transaction; the verbs hand it a typed ask
built here: the runtime's agents and workflows, whether its decisions claim runs themselves, a
fresh grant id, and the subject an edit would have as the request's agent's gate sees it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..._core.access import Principal
from ..._core.deciding import DecisionAsk, keep_secrets
from ..._core.decisions import Approve, Decision, Via
from ..._core.requests import ApprovalRequest, Request, Subject, is_remote_call
from ..._core.starting import StartAsk
from ..._engine.answer_types import feedback_problems
from ...exceptions import RequestNotFound
from .._cycle import Cycle
from .._kernel import Kernel, new_id
from .._runner import CallOptions


def decision_ask(
    c: Cycle,
    request_id: str,
    decision: Decision,
    *,
    principal: Principal,
    now: float,
    via: Via | None,
    resume: bool,
    options: CallOptions,
    edited_subject: Subject | None = None,
    feedback: Mapping[str, str] | None = None,
) -> DecisionAsk:
    """The ask the store's `decide_request` judges: the decision, its caller, and this runtime's facts."""
    return DecisionAsk(
        request_id=request_id,
        decision=decision,
        principal=principal,
        now=now,
        via=via,
        resume=resume,
        holder=c.k.holder,
        claims_with_decision=c.engine is None,
        workflows=c.workflow_names,
        grant_id=new_id("grt"),
        host_keeps_grants=options.host_keeps_grants,
        edited_subject=edited_subject,
        feedback=feedback,
    )


async def approval_facts(
    c: Cycle, request_id: str, decision: Decision
) -> tuple[Subject | None, Mapping[str, str] | None]:
    """What an approval needs checked by this runtime, read before the decision's transaction.

    The subject its edited arguments would be approved for (`None`: no edit, or the edited call would need
    no approval at all), and how its feedback breaks the type the tool asked it in (`None`: no such type).
    A request's tool, run and schema never change once raised, so reading them first is safe; anything
    but an approval with edits or feedback needs neither, and nothing is read.

    Raises:
        RequestNotFound: no request has this id.
    """
    if not isinstance(decision, Approve) or (decision.edited_args is None and decision.payload is None):
        return None, None  # a plain approval, most of them: nothing to read (no feedback has no type to break)
    found = await c.k.store.request_with_run(request_id)
    if found is None:
        raise RequestNotFound(request_id)
    return (
        subject_of_edit(c.k, found.request, decision, agent=found.run.agent),
        feedback_of(c.k, found.request, decision),
    )


def feedback_of(k: Kernel, request: Request, decision: Decision) -> Mapping[str, str] | None:
    """How an approval's feedback breaks the Python type its tool asked it in, loaded here (docs: approval feedback)."""
    return feedback_problems(request, decision, base_dir=k.config.base_dir)


def subject_of_edit(k: Kernel, request: Request, decision: Decision, *, agent: str) -> Subject | None:
    """The subject `decision`'s edited arguments have, as the gate of `agent` (whose run raised `request`) says.

    `None` where the core's `check_same_subject` reads no subject: no edit, a request without one,
    a service's, a remote agent's call.
    """
    if (
        not isinstance(request, ApprovalRequest)
        or not isinstance(decision, Approve)
        or decision.edited_args is None
        or request.subject is None
        or request.service_request is not None
        or is_remote_call(request)
    ):
        return None
    kept = keep_secrets(request, decision)
    assert isinstance(kept, Approve) and kept.edited_args is not None
    return k.built(agent).gate.subject_for(request.tool_name, kept.edited_args)


def start_ask(c: Cycle, principal: Principal, agent: str | None) -> StartAsk:
    """The ask the store's `begin_run` checks the thread against: the speaker, the agent named, what runs here."""
    return StartAsk(principal=principal, agent=agent, agents=tuple(c.k.agents), workflows=c.workflow_names)
