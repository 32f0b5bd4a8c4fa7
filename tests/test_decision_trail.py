"""Every decision leaves a trail: a line in the thread's transcript and a record in the audit log.

Approved (with its scope), rejected (with its reason), edited (field by field), allowed by a
remembered approval (naming it), answered (redacted where configured), expired and skipped, each
with the interface it came through; a failed run shows its error where it happened.
"""

from __future__ import annotations

from typing import Any

from sayso import Answer, Approve, Reject, Sayso
from sayso._runtime import TranscriptEntry

from .conftest import MakeApp
from .models import tool_model
from .tools import delete_file, explode, pay

SURVEY = {"questions": [{"question": "Which colour?", "choices": ["red", "blue"]}]}


def route(said: str) -> tuple[str, dict[str, Any]] | str:
    verb, _, rest = said.partition(" ")
    if verb == "delete":
        return "delete_file", {"name": rest}
    if verb == "pay":
        return "pay", {"amount": int(rest), "token": "s3cret"}
    if said in ("explode", "survey"):
        return (said, {}) if said == "explode" else ("ask_user", SURVEY)
    return "ok"


def make(make_app: MakeApp, **kwargs: Any) -> Sayso:
    agents = {
        "files": {
            "model": "m",
            "tools": [delete_file, pay, explode],
            "redact": ["token", "answer"],
            "interrupt": {"tools": [{"name": "delete_file", "remember": "always"}, "pay"], "ttl_seconds": 60},
        }
    }
    return make_app(agents, model=tool_model(route, read="{tool}: {result}"), **kwargs)


def decisions(entries: list[TranscriptEntry]) -> list[Any]:
    return [e.decision for e in entries if e.role == "decision" and e.decision is not None]


async def test_approvals_rejections_and_edits_are_transcript_lines(make_app: MakeApp) -> None:
    """The transcript says who approved, for how long, through which interface; why a call was rejected;
    and what an edit changed, field by field, with redacted fields kept hidden."""
    async with make(make_app) as app:
        first = await app.run("delete a")
        await app.decide(first.requests[0].request_id, Approve(scope="thread"), via="cli")
        second = await app.run("pay 7", thread_id=first.thread_id)
        await app.decide(second.requests[0].request_id, Reject(reason="too much"), via="rest")
        third = await app.run("pay 9", thread_id=first.thread_id)
        edited = Approve(edited_args={"amount": 3, "token": "0ther"})
        await app.decide(third.requests[0].request_id, edited, via="web")
        lines = decisions(await app.transcript(first.thread_id))
    approved, rejected, edit = lines
    assert (approved["decision"], approved["scope"], approved["principal"], approved["via"]) == (
        "approve",
        "thread",
        "local",
        "cli",
    )
    assert (rejected["decision"], rejected["reason"], rejected["via"]) == ("reject", "too much", "rest")
    assert edit["edits"] == [
        {"field": "amount", "before": 9, "after": 3},
        {"field": "token", "before": "«redacted»", "after": "«redacted»"},
    ]
    assert "s3cret" not in repr(lines) and "0ther" not in repr(lines)


async def test_a_call_under_a_remembered_approval_names_the_grant_and_is_audited_as_executed(
    make_app: MakeApp,
) -> None:
    """A call a grant allows shows which grant in the transcript, and the audit has its decision and `executed`."""
    async with make(make_app) as app:
        first = await app.run("delete a")
        await app.decide(first.requests[0].request_id, Approve(scope="always"))
        again = await app.run("delete b", thread_id=first.thread_id)
        assert again.status == "completed"
        (grant,) = await app.grants()
        allowed = decisions(await app.transcript(first.thread_id))[-1]
        audit = [r.body for r in await app.audit_log()]
    assert (allowed["by"], allowed["grant_id"], allowed["subject_label"]) == (
        "permission",
        grant.grant_id,
        "every call to delete_file",
    )
    executed = [b for b in audit if b["event"] == "executed"]
    assert [(b["tool_name"], b["executed_args"], b.get("grant_id")) for b in executed] == [
        ("delete_file", {"name": "a"}, None),
        ("delete_file", {"name": "b"}, grant.grant_id),
    ]
    assert [b["by"] for b in audit if b["event"] == "decision"] == ["person", "permission"]


async def test_answers_are_in_the_transcript_and_the_audit_redacted_as_configured(make_app: MakeApp) -> None:
    """The answer to a question is recorded with its question, and hidden where the agent's `redact` names it."""
    async with make(make_app) as app:
        asked = await app.run("survey")
        await app.decide(asked.requests[0].request_id, Answer(answers=(("blue",),)))
        (line,) = decisions(await app.transcript(asked.thread_id))
        (audited,) = [r.body for r in await app.audit_log() if r.body.get("decision") == "answer"]
    assert line["answers"] == [{"question": "Which colour?", "answer": "«redacted»"}]
    assert audited["answers"] == line["answers"]


async def test_answers_are_shown_when_nothing_is_redacted(make_app: MakeApp) -> None:
    """Without a redaction rule the answer given is in the transcript and the audit log as given."""
    agents = {"files": {"model": "m", "tools": [delete_file]}}
    async with make_app(agents, model=tool_model(route, read="{tool}: {result}")) as app:
        asked = await app.run("survey")
        await app.decide(asked.requests[0].request_id, Answer(answers=(("blue",),)))
        (line,) = decisions(await app.transcript(asked.thread_id))
        (audited,) = [r.body for r in await app.audit_log() if r.body.get("decision") == "answer"]
    assert line["answers"] == audited["answers"] == [{"question": "Which colour?", "answer": ["blue"]}]


async def test_skipped_and_expired_requests_are_transcript_lines(make_app: MakeApp) -> None:
    """A request skipped by a new message (its sender's skip), and one that ran out of time, each leave a line."""
    now = [1_000.0]
    async with make(make_app, clock=lambda: now[0]) as app:
        first = await app.run("delete a")
        await app.run("never mind", thread_id=first.thread_id)
        expiring = await app.run("pay 5", thread_id=first.thread_id)
        now[0] += 120
        await app.expire()
        skipped, expired = decisions(await app.transcript(first.thread_id))
        state = await app.request(expiring.requests[0].request_id)
    assert (skipped["decision"], skipped["by"], skipped["principal"], skipped["reason"]) == (
        "skip",
        "person",
        "local",
        "the person sent a message instead of answering",
    )
    assert (expired["decision"], expired["by"], expired["expires_at"]) == ("expired", "expiry", 1_060.0)
    assert state.decision is not None and state.decision.via is None


async def test_a_failed_run_is_an_error_line_where_it_happened(make_app: MakeApp) -> None:
    """A run that failed shows the message that started it and its error, between the runs before and after."""
    async with make(make_app) as app:
        ok = await app.run("hello")
        failed = await app.run("explode", thread_id=ok.thread_id)
        await app.run("hello again", thread_id=ok.thread_id)
        lines = [(e.role, e.text) for e in await app.transcript(ok.thread_id) if e.role in ("user", "error")]
    assert failed.status == "failed"
    assert lines == [
        ("user", "hello"),
        ("user", "explode"),
        ("error", failed.error),
        ("user", "hello again"),
    ]


async def test_every_audit_record_is_one_typed_event(make_app: MakeApp) -> None:
    """Each body in the audit log (decisions by a person and by a grant, executions, a revoked grant, an
    expiry, answers) reads back as exactly one of the audit events, with no key its shape does not name."""
    from sayso._core.audit_events import AUDIT_EVENT_ADAPTER

    async with make(make_app) as app:
        first = await app.run("delete a")
        await app.decide(first.requests[0].request_id, Approve(scope="always"), via="cli")
        await app.run("delete b", thread_id=first.thread_id)
        (grant,) = await app.grants()
        await app.revoke_grant(grant.grant_id)
        paid = await app.run("pay 9", thread_id=first.thread_id)
        await app.decide(paid.requests[0].request_id, Approve(edited_args={"amount": 3, "token": "x"}))
        asked = await app.run("survey", thread_id=first.thread_id)
        await app.decide(asked.requests[0].request_id, Answer(answers=(("red",),)))
        audit = [r.body for r in await app.audit_log()]
    assert [b["event"] for b in audit] == [
        "decision",
        "executed",
        "decision",
        "executed",
        "grant_revoked",
        "decision",
        "executed",
        "decision",
    ]
    for body in audit:
        assert AUDIT_EVENT_ADAPTER.validate_python(body) == body
    broken = {**audit[0], "surprise": 1}
    try:
        AUDIT_EVENT_ADAPTER.validate_python(broken)
    except ValueError as exc:
        assert "surprise" in str(exc)
    else:
        raise AssertionError("a body with a key its event does not name was accepted")


def test_every_kind_of_audit_event_says_when_it_happened() -> None:
    """Each shape of the audit log keeps its time under the key `event_time` reads for it, required and a number:
    no kind of record (a vote's `voted_at` among them) shows without a time in the web UI's or REST's log."""
    from typing import get_args, get_type_hints

    from pydantic import Tag

    from sayso._core.audit_events import AuditEvent, event_time, time_key

    members = get_args(get_args(AuditEvent)[0])
    assert len(members) == 13
    for member in members:
        shape, tag = get_args(member)[0], next(m.tag for m in get_args(member)[1:] if isinstance(m, Tag))
        key = time_key(tag)
        assert key in shape.__required_keys__ and get_type_hints(shape)[key] is float, (tag, key)
    vote = {"event": "vote", "voted_at": 12.5, "request_id": "req_1"}
    assert event_time(vote) == 12.5
    assert event_time({"event": "decision", "grant_id": "grant_1", "granted_at": 1.0, "decided_at": 2.0}) == 2.0
    assert event_time({"event": "executed", "at": True}) is None
