"""The one module that maps between sayso's core types and pydantic-ai's deferred-tool types.

Deferred calls become requests when a run pauses; decisions become `DeferredToolResults`
when it resumes; and every decided call's result in history gets its approval record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, assert_never

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturn, ToolReturnPart

from .._core.audit_events import approval_record
from .._core.decisions import (
    Accept,
    Answer,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    DecisionRecord,
    Decline,
    Reject,
    question_answers,
)
from .._core.model_text import RejectionText, model_text
from .._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    DelegateRequest,
    ElicitationRequest,
    QuestionRequest,
    Request,
    RequestBase,
    default_hint,
)
from .calls import (
    ApprovalDeferral,
    CallApproved,
    CallRejected,
    ClientToolDeferral,
    DelegateDeferral,
    ElicitationAnswered,
    ElicitationDeferral,
    QuestionDeferral,
    deferral_of,
)


def requests_from(
    deferred: DeferredToolRequests,
    history: Sequence[ModelMessage],
    *,
    run_id: str,
    thread_id: str,
    agent_path: str,
    now: float,
    new_id: Callable[[], str],
    principal: str | None = None,
    redact: tuple[str, ...] = (),
    parent_call_id: str | None = None,
    chat_thread_id: str | None = None,
) -> list[Request]:
    """One request per deferred call, in the order the model made the calls.

    `chat_thread_id` is the person's chat when the run is a delegate's (its requests carry it, so a
    `thread` grant given on one covers the chat, not the delegate's own thread, and interfaces link to it).
    """
    order = _call_order(history)
    calls = sorted([*deferred.approvals, *deferred.calls], key=lambda c: order.get(c.tool_call_id, len(order)))
    approval_ids = {c.tool_call_id for c in deferred.approvals}
    requests: list[Request] = []
    for call in calls:
        deferral = deferral_of(deferred.metadata.get(call.tool_call_id))
        ttl = deferral.ttl_seconds if deferral else None
        common = RequestBase(
            request_id=new_id(),
            run_id=run_id,
            thread_id=thread_id,
            agent_path=agent_path,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args_as_dict(),
            created_at=now,
            expires_at=(deferral.expires_at if deferral else None) or (now + ttl if ttl else None),
            principal=principal,
            redact=redact,
            parent_call_id=parent_call_id,
            chat_thread_id=chat_thread_id,
        )
        match deferral:
            case ElicitationDeferral(elicitation=asked):
                requests.append(
                    ElicitationRequest.of(
                        common,
                        server=asked.server,
                        mode=asked.mode,
                        message=asked.message,
                        requested_schema=asked.requested_schema,
                        url=asked.url,
                        elicitation_id=asked.elicitation_id,
                        delivery=asked.delivery,
                        task=asked.task,
                        replay=asked.replay,
                        holder=asked.holder,
                    )
                )
            case _ if call.tool_call_id in approval_ids:
                # pydantic-ai's own `requires_approval` tools defer without sayso's value.
                approval = deferral if isinstance(deferral, ApprovalDeferral) else ApprovalDeferral()
                requests.append(
                    ApprovalRequest.of(
                        replace(common, routing=approval.routing),
                        hint=approval.hint or default_hint(call.tool_name),
                        args_schema=approval.args_schema,
                        scopes=approval.scopes,
                        payload=approval.payload,
                        from_body=approval.from_body,
                        subject=approval.subject,
                        binding=approval.binding,
                        service_request=approval.service_request,
                        tool_info=approval.tool_info,
                        response_schema=approval.response_schema,
                        response_type=approval.response_type,
                        on_reject=approval.on_reject,
                        asked_because=approval.asked_because,
                        rule=approval.rule,
                        escalation=approval.escalation,
                        on_timeout=approval.on_timeout,
                    )
                )
            case DelegateDeferral(child_run_id=child_run_id):
                requests.append(DelegateRequest.of(common, child_run_id=child_run_id))
            case QuestionDeferral(questions=questions):
                requests.append(QuestionRequest.of(common, questions=questions))
            case ClientToolDeferral(description=description, args_schema=args_schema):
                requests.append(ClientToolRequest.of(common, description=description, args_schema=args_schema))
            case ApprovalDeferral(args_schema=args_schema):
                # An approval's value on a call deferred to someone outside: the call is theirs to run.
                requests.append(ClientToolRequest.of(common, args_schema=args_schema))
            case None:
                # A tool of the agent's own that deferred its call to someone outside.
                requests.append(ClientToolRequest.of(common))
            case _:
                assert_never(deferral)
    return requests


def _call_order(history: Sequence[ModelMessage]) -> dict[str, int]:
    for message in reversed(history):
        if isinstance(message, ModelResponse):
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            return {c.tool_call_id: i for i, c in enumerate(calls)}
    return {}


def deferred_results(
    requests: Sequence[Request], decisions: Mapping[str, DecisionRecord], *, rejection: RejectionText | None = None
) -> DeferredToolResults:
    """The results pydantic-ai applies on resume, one per request of the pause.

    `rejection` is the agent's wording of a rejected call (`interrupt.rejection_text`).
    """
    results = DeferredToolResults()
    for request in requests:
        record = decisions[request.request_id]
        decision = record.decision
        call_id = request.tool_call_id
        text = model_text(decision, rejection=rejection)
        if isinstance(request, ApprovalRequest):
            if isinstance(decision, Approve):
                results.approvals[call_id] = ToolApproved(override_args=decision.edited_args)
                results.metadata[call_id] = CallApproved(
                    request_id=request.request_id,
                    payload=decision.payload if decision.payload is not None else request.payload,
                    principal=record.principal,
                    edited=decision.edited_args is not None,
                    approved_args=decision.edited_args,
                    # A service checks its own subject; sayso checks the policy's.
                    subject_key=request.subject.key
                    if request.subject is not None and request.service_request is None
                    else None,
                    response=decision.payload,
                    from_body=request.from_body,
                ).as_metadata()
            elif isinstance(decision, Reject) and request.on_reject == "call":
                # ADK's `Confirmed=false`: the body runs again and decides what the rejection returns.
                results.approvals[call_id] = ToolApproved()
                results.metadata[call_id] = CallRejected(
                    request_id=request.request_id,
                    payload=request.payload,
                    principal=record.principal,
                    reason=decision.reason,
                ).as_metadata()
            else:
                assert text is not None
                results.approvals[call_id] = ToolDenied(text)
        elif isinstance(request, ElicitationRequest):
            # The call goes on when the person answered: the answer goes back to the server (or, for a
            # visited URL, the refused call is issued again). A request closed without an answer, or a
            # URL the person would not visit, ends the call here with what the model reads.
            if isinstance(decision, Accept) or (isinstance(decision, Decline | Cancel) and request.delivery != "retry"):
                results.approvals[call_id] = ToolApproved()
                results.metadata[call_id] = ElicitationAnswered(
                    request_id=request.request_id,
                    principal=record.principal,
                    elicitation=request,
                    answer=decision,
                ).as_metadata()
            else:
                assert text is not None
                results.approvals[call_id] = ToolDenied(text)
        elif isinstance(decision, Answer):
            assert isinstance(request, QuestionRequest)
            results.calls[call_id] = ToolReturn(question_answers(request, decision))
        elif isinstance(decision, ClientResult):
            results.calls[call_id] = ToolReturn(decision.value)
        elif isinstance(decision, ClientError):
            results.calls[call_id] = ToolFailed(decision.message)
        else:
            assert text is not None
            results.calls[call_id] = ToolReturn(text)
    return results


def annotate(
    messages: Sequence[ModelMessage], requests: Sequence[Request], decisions: Mapping[str, DecisionRecord]
) -> list[ModelMessage]:
    """Put each decided call's approval record on its result in the new messages."""
    by_call = {r.tool_call_id: r for r in requests if r.request_id in decisions}
    if not by_call:
        return list(messages)
    out: list[ModelMessage] = []
    for message in messages:
        if isinstance(message, ModelRequest) and any(
            isinstance(p, ToolReturnPart) and p.tool_call_id in by_call for p in message.parts
        ):
            parts = [
                replace(
                    p,
                    metadata={
                        "approval": approval_record(
                            by_call[p.tool_call_id], decisions[by_call[p.tool_call_id].request_id]
                        )
                    },
                )
                if isinstance(p, ToolReturnPart) and p.tool_call_id in by_call
                else p
                for p in message.parts
            ]
            message = replace(message, parts=parts)
        out.append(message)
    return out


def closing_results(
    history: Sequence[ModelMessage],
    requests: Sequence[Request],
    decisions: Mapping[str, DecisionRecord],
    ran: Mapping[str, Any],
    *,
    error: str,
) -> list[ModelMessage]:
    """Results for the calls a failed run left unanswered, so its thread takes the next message.

    A run that fails after a pause stores nothing of its own, which would leave the thread's
    history ending in the paused calls (pydantic-ai refuses any new prompt on it). Each such
    call gets a result: what an approved call returned (`ran`, by request id), what the model
    reads for a decision that ran nothing, or the failure itself, and the decision's record
    (as on any decided call's result), so the transcript shows what was decided.
    """
    last = next((i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], ModelResponse)), None)
    if last is None:
        return []
    response = history[last]
    assert isinstance(response, ModelResponse)
    answered = {
        p.tool_call_id
        for m in history[last + 1 :]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }
    by_call = {r.tool_call_id: r for r in requests}
    parts: list[ToolReturnPart] = []
    for call in response.tool_calls:
        if call.tool_call_id in answered:
            continue
        request = by_call.get(call.tool_call_id)
        record = decisions.get(request.request_id) if request is not None else None
        text = model_text(record.decision) if record is not None else None
        content: Any
        if request is not None and request.request_id in ran:
            content = ran[request.request_id]
        elif text is not None:
            content = text
        else:
            content = f"No result: the run failed before this call finished ({error})."
        parts.append(ToolReturnPart(tool_name=call.tool_name, content=content, tool_call_id=call.tool_call_id))
    if not parts:
        return []
    return annotate([ModelRequest(parts=parts)], requests, decisions)


def answer_messages(request: Request, record: DecisionRecord) -> list[ModelMessage]:
    """A workflow input's answer in its thread's history, so the transcript shows it where it was given.

    It is kept as an approval is, on a result of the node's question (the node and its question's
    key stand for the tool and its call): a decision line with what the person answered
    (redacted as the request says), then the answer itself.
    """
    entry = approval_record(request, record)
    content = entry["value"] if "value" in entry else model_text(record.decision) or record.decision.kind
    part = ToolReturnPart(
        tool_name=request.tool_name,
        content=content,
        tool_call_id=request.tool_call_id,
        metadata={"approval": entry},
    )
    return [ModelRequest(parts=[part])]
