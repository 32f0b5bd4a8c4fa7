"""An MCP binding as a policy rule (docs/guides/policies.md#mcp-bindings): `when:`, a deny's reason, escalation.

`mcp-server-git`'s `git_commit` is bound with conditions over its `message` argument, whose schema
only the server knows: what a condition names is checked when the server lists the tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ToolDefinition

from sayso import Approve, Config, ConfigError, NotAllowed, RequestNotFound, Sayso
from sayso._core.channels import parse_target
from sayso._core.policy import ToolRule
from sayso._engine.tools import RULES_KEY, rules_of

from ..conftest import approvals
from ..models import tool_model
from .conftest import git_server
from .test_git import commits

T0 = 1_900_000_000.0


def app_with(
    repo: Path, tmp_path: Path, bindings: list[dict[str, Any]], *, webhooks: list[Any] | None = None, **kwargs: Any
) -> Sayso:
    model = tool_model(
        lambda said: ("git_commit", {"repo_path": str(repo), "message": said.removeprefix("commit ")}),
        read="commit: {result}",
    )
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "principals": [{"name": n} for n in ("alice", "bob", "carol", "dana")],
            "groups": {"ops": ["bob", "carol"], "leads": ["dana"]},
            "agents": {"dev": {"model": "m", "mcp": bindings}},
            "mcp_servers": {"git": git_server(repo)},
            "base_dir": tmp_path,
            "webhooks": webhooks or [],
        }
    )
    return Sayso(config, models={"m": model}, **kwargs)


RELEASE = {
    "server": "git",
    "tools": ["git_commit"],
    "rule": "release-commits",
    "when": "args.message.startsWith('Release')",
    "reason": "{args.message} is a release",
    "approvers": ["ops"],
}
FORCED = {
    "server": "git",
    "tools": ["git_commit"],
    "rule": "no-wip",
    "when": "args.message.contains('WIP')",
    "action": "deny",
    "reason": "work in progress is not committed",
}


async def test_a_bindings_condition_asks_its_approvers_saying_why(repo: Path, tmp_path: Path) -> None:
    async with app_with(repo, tmp_path, [FORCED, RELEASE]) as app:
        paused = await app.run("commit Release 1.0", principal="alice")
        [request] = approvals(paused.requests)
        assert request.why == "asked because Release 1.0 is a release (rule release-commits)"
        assert request.routing is not None and request.routing.rule == "release-commits"
        with pytest.raises(NotAllowed, match="'alice' is not an approver"):
            await app.decide(request.request_id, Approve(), principal="alice")
        done = await app.decide(request.request_id, Approve(), principal="bob")
    assert done.run.status == "completed" and commits(repo) == ["Release 1.0"]


async def test_a_bindings_deny_reaches_the_model_and_the_call_never_runs(repo: Path, tmp_path: Path) -> None:
    async with app_with(repo, tmp_path, [FORCED, RELEASE]) as app:
        result = await app.run("commit WIP: half a feature", principal="alice")
        denied = [r.body for r in await app.audit_log() if r.body["event"] == "policy_denied"]
        assert result.status == "completed" and commits(repo) == []
        assert result.output == "commit: Denied by policy (rule no-wip): work in progress is not committed"
        assert [(d["rule"], d["tool_name"]) for d in denied] == [("no-wip", "git_commit")]
        plain = await app.run("commit Add the readme", principal="alice")  # no condition holds: it runs unasked
    assert plain.status == "completed" and commits(repo) == ["Add the readme"]


async def test_a_bindings_request_escalates_on_the_clock_and_times_out(repo: Path, tmp_path: Path) -> None:
    """After an hour the leads may decide too; after four, nobody having decided, the rule's timeout rejects."""
    now = [T0]
    steps = {
        "escalate": [{"after": "1h", "add_approvers": ["leads"]}],
        "on_timeout": {"after": "4h", "action": "reject", "reason": "nobody approved within 4 hours"},
    }
    async with app_with(repo, tmp_path, [{**RELEASE, **steps}], clock=lambda: now[0]) as app:
        paused = await app.run("commit Release 2.0", principal="alice")
        [request] = approvals(paused.requests)
        with pytest.raises(RequestNotFound):  # not dana's to see before the escalation
            await app.decide(request.request_id, Approve(), principal="dana")
        now[0] = T0 + 3600
        await app.expire()
        fired = [r.body for r in await app.audit_log() if r.body["event"] == "escalated"]
        assert [(e["step"], e["rule"]) for e in fired] == [(0, "release-commits")]
        [widened] = approvals((await app.inbox(principal="dana")).requests)
        assert widened.routing is not None and "dana" in [a.name for a in widened.routing.approvers]
        now[0] = T0 + 4 * 3600
        await app.expire()
        state = await app.request(request.request_id)
    assert state is not None and state.decision is not None and state.decision.by == "expiry"
    assert commits(repo) == []


async def test_a_condition_naming_an_argument_the_server_does_not_list_fails_closed(repo: Path, tmp_path: Path) -> None:
    """Checked when the server lists the tool (its schema is not known before): the run fails, nothing runs."""
    typo = {**RELEASE, "when": "args.mesage.startsWith('Release')"}
    async with app_with(repo, tmp_path, [typo]) as app:
        with pytest.raises(ConfigError, match=r"args\.mesage is not an argument of the tool"):
            await app.verify_tools()
        failed = await app.run("commit Release 3.0", principal="alice")
    assert failed.status == "failed" and "args.mesage" in (failed.error or "")
    assert commits(repo) == []


def test_a_binding_whose_calls_run_unasked_takes_no_approval_terms(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="escalate apply to calls that wait for a person"):
        Config.model_validate(
            {
                "agents": {"dev": {"model": "test", "mcp": [{"server": "git", "escalate": [{"after": "1h"}]}]}},
                "mcp_servers": {"git": {"command": "true"}},
            }
        )


async def test_a_bindings_notify_target_is_told_of_its_requests(repo: Path, tmp_path: Path) -> None:
    """The notice goes out only because the binding's rule names the target (a target no rule names is skipped)."""
    hooks = [{"name": "ops", "url": "http://127.0.0.1:9/ops", "secret": "s3cret"}]
    binding = {**RELEASE, "notify": ["webhook:ops"]}
    async with app_with(repo, tmp_path, [binding], webhooks=hooks) as app:
        paused = await app.run("commit Release 4.0", principal="alice")
        claimed = await app.claim_events([parse_target("webhook:ops").key])
    assert [(e.target, e.event, e.data["request"]["id"]) for e in claimed] == [
        ("webhook:ops", "request.opened", paused.requests[0].request_id)
    ]


def test_a_call_whose_binding_rules_this_process_cannot_rebuild_is_refused() -> None:
    """A definition listed elsewhere (another Temporal worker) names its binding's rules; the caller rebuilds them from
    its own config, and when it cannot (no such binding, or bound under other rules) the call is refused, never
    run ungated."""
    listed = ToolDefinition(name="git_commit", metadata={RULES_KEY: ["release-commits"]})
    release = ToolRule(name="git_commit", rule="release-commits")
    for source in (None, lambda _: None, lambda _: (), lambda _: (ToolRule(name="git_commit", rule="mcp:git"),)):
        with pytest.raises(ConfigError, match="under rules release-commits, which this process's config does not"):
            rules_of(listed, source)
    assert rules_of(listed, lambda _: (release,)) == (release,)
    # A definition naming no rules still gets those the caller's own config has: stricter, never looser.
    assert rules_of(ToolDefinition(name="git_commit"), lambda _: (release,)) == (release,)
