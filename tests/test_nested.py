"""Nested agents (docs/concepts/pauses.md#nested-agents): a pause anywhere in a tree of delegates pauses the whole run
and resumes every level."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ToolReturnPart

from sayso import (
    Answer,
    Approve,
    ClientError,
    ClientResult,
    ClientTool,
    Config,
    Decision,
    InvalidInput,
    Reject,
    Request,
    RunNotFound,
    Sayso,
    Skip,
    ThreadNotFound,
)

from .conftest import ROOT, MakeApp
from .models import Call, Said, ToolModel, answer, tool_model
from .tools import ran, run_sql


def queries() -> list[str]:
    """The queries `run_sql` ran, in order."""
    return [args["query"] for args in ran("run_sql")]


def always(call: Call, read: str = "{result}") -> ToolModel:
    """A model that makes `call` whatever it is asked, then says `read` of the result."""
    return tool_model(lambda said: call, read=read)


def chain(depth: int) -> tuple[dict[str, Any], dict[str, ToolModel]]:
    """coordinator → a1 → … → a{depth}; the deepest asks approval for `run_sql` and passes the answer up."""
    names = ["coordinator", *[f"a{i}" for i in range(1, depth + 1)]]
    agents: dict[str, Any] = {}
    models: dict[str, ToolModel] = {}
    for upper, lower in zip(names, names[1:], strict=False):
        agents[upper] = {"model": upper, "delegates": [{"agent": lower, "description": f"the {lower} specialist"}]}
        models[upper] = always((lower, {"task": "count the orders"}), read=f"{upper} got: {{result}}")
    leaf = names[-1]
    agents[leaf] = {"model": leaf, "tools": [run_sql], "interrupt": {"tools": ["run_sql"]}}
    models[leaf] = always(("run_sql", {"query": "select count(*)"}))
    return agents, models


@pytest.mark.parametrize("depth", [1, 2, 3])
async def test_a_pause_at_any_depth_pauses_the_top_and_resumes_every_level(make_app: MakeApp, depth: int) -> None:
    """A pause in a delegate at any depth pauses the top run under its agent path, and approving it resumes every
    level in its own history."""
    agents, models = chain(depth)
    async with make_app(agents, models=models) as app:
        paused = await app.run("how many orders?", agent="coordinator")
        assert paused.status == "paused"
        [request] = paused.requests
        path = "/".join(["coordinator", *[f"a{i}" for i in range(1, depth + 1)]])
        assert request.agent_path == path
        assert request.run_id != paused.run_id
        assert request.parent_call_id is not None
        delegate_run = await app.store.get_run(request.run_id)
        assert delegate_run.parent_call_id == request.parent_call_id
        leaf_model = models[f"a{depth}"]
        before = len(leaf_model.asked)
        done = await app.decide(request.request_id, Approve())
    assert done.run.run_id == paused.run_id
    assert done.run.status == "completed"
    expected = "rows for select count(*)"
    for i in range(depth - 1, -1, -1):
        upper = "coordinator" if i == 0 else f"a{i}"
        expected = f"{upper} got: {expected}"
    assert done.run.output == expected
    assert queries() == ["select count(*)"]
    [resumed] = leaf_model.asked[before:]
    assert [p.content for p in resumed.request.parts if isinstance(p, ToolReturnPart)] == [expected.split(": ")[-1]]
    assert resumed.history == 3, "the delegate's own history continues: its prompt, its call, the result"


async def test_a_message_into_a_paused_delegates_thread_is_refused_and_the_chat_carries_on(make_app: MakeApp) -> None:
    """A delegate's thread takes no messages of its own while its run works for a chat: the message is refused
    naming the chat, the delegate's request stays open, and approving it completes the chat's run."""
    agents, models = chain(1)
    async with make_app(agents, models=models) as app:
        paused = await app.run("how many orders?", agent="coordinator")
        [request] = paused.requests
        with pytest.raises(InvalidInput, match=paused.thread_id):
            await app.run("hello", thread_id=request.thread_id)
        assert [r.request_id for r in (await app.result(paused.run_id)).requests] == [request.request_id]
        done = await app.decide(request.request_id, Approve())
    assert (done.run.status, done.run.output) == ("completed", "coordinator got: rows for select count(*)")
    assert queries() == ["select count(*)"]


async def test_every_request_kind_works_from_a_delegate(make_app: MakeApp) -> None:
    """Questions and client tools raised in a delegate surface on the top run under the delegate's path, and their
    answers flow back up, each told to the coordinator in its note."""
    agents = {
        "coordinator": {"model": "c", "delegates": [{"agent": "helper"}], "client_tools": []},
        "helper": {"model": "h", "client_tools": ["pick_color"]},
    }
    ask: Call = ("ask_user", {"questions": [{"question": "Colour?", "choices": ["red"]}]})
    models = {
        "c": tool_model(lambda said: ("helper", {"task": said}), read="{result}"),
        "h": tool_model(
            lambda said: ask if said == "ask" else ("pick_color", {}),
            read=lambda tool, result: f"{'asked' if tool == 'ask_user' else 'picked'}: {result}",
        ),
    }
    pick = ClientTool(name="pick_color", description="Pick a colour in the browser.")
    async with make_app(agents, models=models) as app:
        question = await app.run("ask", agent="coordinator")
        assert [(r.kind, r.agent_path) for r in question.requests] == [("question", "coordinator/helper")]
        answered = await app.decide(question.requests[0].request_id, Answer(answers=(("blue",),)))
        client = await app.run("pick", agent="coordinator", client_tools=[pick])
        assert [(r.kind, r.agent_path) for r in client.requests] == [("client_tool", "coordinator/helper")]
        picked = await app.decide(client.requests[0].request_id, ClientResult(value="green"))
    assert answered.run.output is not None and answered.run.output.startswith('asked: [{"question": "Colour?"')
    assert "(Note: helper asked the person 'Colour?' → blue.)" in answered.run.output
    assert picked.run.output == "picked: green\n\n(Note: helper asked the client to run pick_color {} → green.)"


async def test_the_coordinators_note_covers_every_answer_its_delegate_received(make_app: MakeApp) -> None:
    """A delegate's browser tool error and a skipped question reach its coordinator's note in plain words."""
    agents = {
        "coordinator": {"model": "c", "delegates": [{"agent": "helper"}]},
        "helper": {"model": "h", "client_tools": ["pick_color"]},
    }
    both: list[Call] = [("pick_color", {"palette": "warm"}), ("ask_user", {"questions": [{"question": "Why?"}]})]
    models = {
        "c": tool_model(lambda said: ("helper", {"task": said}), read="{result}"),
        "h": tool_model(lambda said: both, read="done"),
    }
    pick = ClientTool(name="pick_color", description="Pick a colour in the browser.")
    async with make_app(agents, models=models) as app:
        paused = await app.run("go", agent="coordinator", client_tools=[pick])
        by_kind = {r.kind: r.request_id for r in paused.requests}
        answers: dict[str, Decision] = {
            by_kind["client_tool"]: ClientError(message="no screen"),
            by_kind["question"]: Skip(reason="later"),
        }
        done = await app.answer_pause(paused.run_id, answers)
    assert done.output == (
        'done\n\n(Note: helper asked the client to run pick_color {"palette": "warm"} → Error: no screen; '
        "the person 'Why?' → Skipped: later.)"
    )


async def test_a_delegate_that_pauses_again_pauses_the_top_again(make_app: MakeApp) -> None:
    """A delegate that asks again after each approval pauses the top run again each time, without calling the
    coordinator's model between."""
    agents = {
        "coordinator": {"model": "c", "delegates": [{"agent": "ops"}]},
        "ops": {"model": "o", "tools": [run_sql], "interrupt": {"tools": ["run_sql"]}},
    }
    coordinator = always(("ops", {"task": "migrate"}))

    def next_step(tool: str, result: str) -> Said:
        """After step 1 comes step 2, after step 2 step 3; after that the migration is done."""
        done = int(result.removeprefix("rows for step "))
        return ("run_sql", {"query": f"step {done + 1}"}) if done < 3 else f"migrated: {result}"

    models = {"c": coordinator, "o": tool_model(lambda said: ("run_sql", {"query": "step 1"}), read=next_step)}
    async with make_app(agents, models=models) as app:
        result = await app.run("go", agent="coordinator")
        for step in (1, 2, 3):
            assert result.status == "paused"
            [request] = result.requests
            assert request.args == {"query": f"step {step}"}
            assert len(coordinator.asked) == 1, "the coordinator's model is not called while its delegate waits"
            result = (await app.decide(request.request_id, Approve())).run
    assert result.status == "completed"
    assert result.output == "migrated: rows for step 3"
    assert queries() == ["step 1", "step 2", "step 3"]


async def test_parallel_delegates_surface_together_and_resume_when_all_are_answered(make_app: MakeApp) -> None:
    """Pauses in parallel delegates at different depths surface together, and the coordinator resumes once, after all
    are decided, reading each outcome."""
    agents = {
        "coordinator": {"model": "c", "delegates": [{"agent": "analyst"}, {"agent": "ops"}]},
        "analyst": {"model": "a", "delegates": [{"agent": "sql"}]},
        "sql": {"model": "s", "tools": [run_sql], "interrupt": {"tools": ["run_sql"]}},
        "ops": {"model": "o", "tools": [run_sql], "interrupt": {"tools": ["run_sql"]}},
    }
    coordinator = tool_model(
        lambda said: [("analyst", {"task": "numbers"}), ("ops", {"task": "cleanup"})], read="{results}"
    )
    models = {
        "c": coordinator,
        "a": always(("sql", {"task": "count"}), read="analyst: {result}"),
        "s": always(("run_sql", {"query": "count"})),
        "o": always(("run_sql", {"query": "vacuum"})),
    }
    async with make_app(agents, models=models) as app:
        paused = await app.run("report", agent="coordinator")
        deep, shallow = sorted(paused.requests, key=lambda r: r.agent_path)
        assert (deep.agent_path, shallow.agent_path) == ("coordinator/analyst/sql", "coordinator/ops")
        assert deep.request_id != shallow.request_id and deep.run_id != shallow.run_id
        halfway = await app.decide(shallow.request_id, Reject(reason="not now"))
        assert halfway.run.status == "paused"
        assert [r.request_id for r in halfway.run.requests] == [deep.request_id]
        assert len(coordinator.asked) == 1
        done = await app.decide(deep.request_id, Approve())
    assert done.run.status == "completed"
    assert done.run.output == "analyst: analyst: rows for count\nops: Declined: not now"
    assert queries() == ["count"]
    assert len(coordinator.asked) == 2


async def test_a_new_message_skips_every_open_request_at_every_level(make_app: MakeApp) -> None:
    """A new message on a thread paused deep in a delegate chain cancels every waiting run, skips every open request
    and tells the coordinator why."""
    agents, models = chain(2)
    coordinator = tool_model(
        lambda said: ("a1", {"task": "count the orders"}) if "orders" in said else f"answering: {said}",
        read="coordinator got: {result}",
    )
    models["coordinator"] = coordinator
    async with make_app(agents, models=models) as app:
        paused = await app.run("how many orders?", agent="coordinator")
        [request] = paused.requests
        middle = (await app.store.get_run(request.run_id)).parent_run_id
        after = await app.run("never mind", thread_id=paused.thread_id)
        statuses = [(await app.store.get_run(r)).status for r in (request.run_id, middle or "")]
        assert await app.open_requests() == []
    assert after.status == "completed"
    assert after.output == "answering: never mind"
    assert statuses == ["cancelled", "cancelled"]
    seen = [p for p in coordinator.asked[-1].request.parts if isinstance(p, ToolReturnPart)]
    assert [p.content for p in seen] == ["Skipped: the person sent a message instead of answering"]
    assert queries() == []


async def test_a_delegate_sees_only_its_own_tools(make_app: MakeApp) -> None:
    """A delegate sees only its own tools: its parent's tools and client tools it is not allowed are unknown to it."""
    agents = {
        "coordinator": {"model": "c", "tools": [run_sql], "delegates": [{"agent": "helper"}]},
        "helper": {"model": "h"},
    }
    models = {"c": always(("helper", {"task": "go"})), "h": always(("run_sql", {"query": "x"}))}
    async with make_app(agents, models=models) as app:
        result = await app.run("go", agent="coordinator", client_tools=[ClientTool(name="pick_color")])
    assert result.status == "completed"
    assert "Unknown tool name: 'run_sql'. Available tools: 'ask_user'" in (result.output or "")
    assert queries() == []


DEEP_CONFIG = """
store: sqlite:///deep.db
models:
  c: {scripted: c.yaml}
  a: {scripted: a.yaml}
  b: {scripted: b.yaml}
  s: {scripted: s.yaml}
agents:
  coordinator: {model: c, delegates: [{agent: a1}]}
  a1: {model: a, delegates: [{agent: a2}]}
  a2: {model: b, delegates: [{agent: sql}]}
  sql: {model: s, tools: ["deep_tools:run_sql"], interrupt: {tools: [run_sql]}}
entry: coordinator
"""


def test_a_pause_at_depth_three_is_resumed_by_a_fresh_process(tmp_path: Path) -> None:
    """A pause three delegates deep, made by one CLI process, is approved by another and the answer passes up every
    level to the same run."""
    (tmp_path / "sayso.yaml").write_text(DEEP_CONFIG)
    (tmp_path / "deep_tools.py").write_text("def run_sql(query: str) -> str:\n    return f'rows for {query}'\n")
    for name, target in (("c", "a1"), ("a", "a2"), ("b", "sql")):
        rules = [
            f"{{user: '.', call: {target}, args: {{task: go}}}}",
            f"{{tool: {target}, reply: '{name}<{{result}}>'}}",
        ]
        (tmp_path / f"{name}.yaml").write_text("rules:\n" + "".join(f"  - {rule}\n" for rule in rules))
    (tmp_path / "s.yaml").write_text(
        "rules:\n  - {user: '.', call: run_sql, args: {query: q}}\n  - {tool: run_sql, reply: '{result}'}\n"
    )
    env_cmd = [sys.executable, "-m", "sayso"]
    first = subprocess.run(
        [*env_cmd, "run", str(tmp_path / "sayso.yaml"), "go", "--json"], capture_output=True, text=True
    )
    paused = json.loads(first.stdout)
    [request] = paused["requests"]
    assert request["agent_path"] == "coordinator/a1/a2/sql"
    second = subprocess.run(
        [*env_cmd, "decide", str(tmp_path / "sayso.yaml"), request["id"], "approve", "--json"],
        capture_output=True,
        text=True,
    )
    done = json.loads(second.stdout)
    assert (done["run_id"], done["status"], done["output"]) == (paused["run_id"], "completed", "c<a<b<rows for q>>>")


def test_team_example_from_separate_processes(tmp_path: Path) -> None:
    """The team example pauses on a question and an approval from two delegates, and separate CLI processes answer
    both to finish the report."""
    example = tmp_path / "team"
    shutil.copytree(ROOT / "examples" / "team", example, ignore=shutil.ignore_patterns("*.db*", "__pycache__"))
    sayso = [sys.executable, "-m", "sayso"]
    paused = json.loads(
        subprocess.run(
            [*sayso, "run", str(example / "sayso.yaml"), "report", "--json"], capture_output=True, text=True
        ).stdout
    )
    kinds = {r["agent_path"]: r for r in paused["requests"]}
    assert set(kinds) == {"coordinator/analyst", "coordinator/ops"}
    assert kinds["coordinator/analyst"]["kind"] == "question"
    assert kinds["coordinator/ops"]["kind"] == "approval"
    subprocess.run(
        [*sayso, "decide", str(example / "sayso.yaml"), kinds["coordinator/analyst"]["id"], "answer", "Q2"],
        check=True,
        capture_output=True,
    )
    out = subprocess.run(
        [*sayso, "decide", str(example / "sayso.yaml"), kinds["coordinator/ops"]["id"], "approve", "--json"],
        capture_output=True,
        text=True,
    )
    done = json.loads(out.stdout)
    assert done["status"] == "completed"
    assert "Revenue in Q2 grew 5%." in done["output"] and "Archived the logs of 2026-10." in done["output"]


async def test_completed_sibling_work_is_not_redone(make_app: MakeApp) -> None:
    """On resume a delegate that had already finished is not run again; its answer is reused beside its sibling's."""
    agents = {
        "coordinator": {"model": "c", "delegates": [{"agent": "fast"}, {"agent": "ops"}]},
        "fast": {"model": "f"},
        "ops": {"model": "o", "tools": [run_sql], "interrupt": {"tools": ["run_sql"]}},
    }
    fast = answer("fast answer")
    models = {
        "c": tool_model(lambda said: [("fast", {"task": "a"}), ("ops", {"task": "b"})], read="{results}"),
        "f": fast,
        "o": always(("run_sql", {"query": "q"})),
    }
    async with make_app(agents, models=models) as app:
        paused = await app.run("go", agent="coordinator")
        assert [r.agent_path for r in paused.requests] == ["coordinator/ops"]
        done = await app.decide(paused.requests[0].request_id, Approve())
    assert done.run.output == "fast: fast answer\nops: rows for q"
    assert len(fast.asked) == 1, "the delegate that had finished is not run again"


async def test_a_client_tools_context_reaches_only_agents_allowed_that_tool(make_app: MakeApp) -> None:
    """A client tool's context reaches the instructions of agents allowed that tool and of no other delegate."""
    agents = {
        "coordinator": {"model": "c", "client_tools": ["request_datasources"], "delegates": [{"agent": "helper"}]},
        "helper": {"model": "h"},
    }
    coordinator = always(("helper", {"task": "go"}))
    helper = answer("done")
    tool = ClientTool(name="request_datasources", context="the person can offer: sales.csv, hr.csv")
    async with make_app(agents, models={"c": coordinator, "h": helper}) as app:
        result = await app.run("go", agent="coordinator", client_tools=[tool])
    assert result.output == "done"
    assert "sales.csv, hr.csv" in (coordinator.asked[0].info.instructions or "")
    assert "sales.csv" not in (helper.asked[0].info.instructions or "")


@pytest.mark.parametrize("depth", [1, 2])
async def test_allow_for_this_chat_on_a_delegates_call_covers_the_chat_not_the_delegates_thread(
    make_app: MakeApp, depth: int
) -> None:
    """A `thread` grant given on a delegate's approval covers the delegate's later calls in the person's chat (each
    delegation runs on a new thread of its own) and none in another chat."""
    agents, models = chain(depth)
    leaf = f"a{depth}"
    agents[leaf]["interrupt"] = {"tools": ["run_sql"], "remember": "thread"}
    async with make_app(agents, models=models) as app:
        paused = await app.run("how many orders?", agent="coordinator")
        [request] = paused.requests
        assert request.thread_id != paused.thread_id  # the delegate's own thread
        await app.decide(request.request_id, Approve(scope="thread"))
        [grant] = await app.grants()
        assert grant.thread_id == paused.thread_id
        again = await app.run("and today?", thread_id=paused.thread_id)
        elsewhere = await app.run("how many orders?", agent="coordinator")
    assert again.status == "completed"
    assert queries() == ["select count(*)", "select count(*)"]
    assert elsewhere.status == "paused"


async def test_always_allowing_a_delegates_call_covers_that_delegate_only(make_app: MakeApp) -> None:
    """An `always` grant given on a delegate's request lets that delegate's later calls through, and never the same
    tool called by its coordinator or by a sibling delegate: those still ask."""
    gated = {"tools": ["run_sql"], "remember": "always"}
    agents = {
        "coordinator": {
            "model": "c",
            "tools": [run_sql],
            "interrupt": gated,
            "delegates": [{"agent": "analyst"}, {"agent": "ops"}],
        },
        "analyst": {"model": "a", "tools": [run_sql], "interrupt": gated},
        "ops": {"model": "o", "tools": [run_sql], "interrupt": gated},
    }
    models = {
        "c": tool_model(
            lambda said: (said, {"task": "go"}) if said in ("analyst", "ops") else ("run_sql", {"query": "mine"}),
            read="{result}",
        ),
        "a": always(("run_sql", {"query": "analyst's"})),
        "o": always(("run_sql", {"query": "ops'"})),
    }
    async with make_app(agents, models=models) as app:
        first = await app.run("analyst", agent="coordinator")
        [request] = first.requests
        assert request.agent_path == "coordinator/analyst"
        await app.decide(request.request_id, Approve(scope="always"))
        again = await app.run("analyst", agent="coordinator")
        sibling = await app.run("ops", agent="coordinator")
        coordinator = await app.run("own", agent="coordinator")
    assert again.status == "completed"
    assert [r.agent_path for r in sibling.requests] == ["coordinator/ops"]
    assert [r.agent_path for r in coordinator.requests] == ["coordinator"]
    assert queries() == ["analyst's", "analyst's"]


def _team(tmp_path: Path, leaf_rule: str | dict[str, Any] = "run_sql") -> Sayso:
    """coordinator → a1 → a2 (whose `run_sql` pauses), for alice, boss (approver for coordinator), leafy (approver
    for a2 only), rita and eve."""
    agents, models = chain(2)
    agents["a2"]["interrupt"] = {"tools": [leaf_rule]}
    names = {"alice": [], "boss": ["coordinator"], "leafy": ["a2"], "rita": [], "eve": []}
    principals = [{"name": n, "approver_for": a} for n, a in names.items()]
    config = Config.model_validate(
        {
            "store": f"sqlite:///{tmp_path / 'sayso.db'}",
            "agents": agents,
            "principals": principals,
            "base_dir": tmp_path,
        }
    )
    return Sayso(config, models=models)


async def _sees(app: Sayso, who: str, run_id: str, thread_id: str) -> tuple[bool, bool]:
    """Whether `who` sees the run, and the thread (each a not found otherwise)."""
    seen: list[bool] = []
    for read, missing in (
        (app.run_record(run_id, principal=who), RunNotFound),
        (app.thread(thread_id, principal=who), ThreadNotFound),
    ):
        try:
            await read
            seen.append(True)
        except missing:
            seen.append(False)
    return seen[0], seen[1]


async def _delegates(app: Sayso, request: Request) -> list[tuple[str, str]]:
    """The runs and threads of the two delegates between the chat and `request`, the leaf's first."""
    leaf = await app.run_record(request.run_id)
    assert leaf.parent_run_id is not None
    return [
        (request.run_id, request.thread_id),
        (leaf.parent_run_id, (await app.run_record(leaf.parent_run_id)).thread_id),
    ]


async def test_who_sees_the_top_run_sees_its_delegates_runs_and_threads(tmp_path: Path) -> None:
    """A delegate's run and its thread answer the same: its owner and an approver of the root agent read both, while
    it waits and after; an approver of the delegate agent only and a stranger are told neither exists. An approver of
    the root agent was shown the delegate's run but told its thread did not exist."""
    async with _team(tmp_path) as app:
        paused = await app.run("how many orders?", agent="coordinator", principal="alice")
        [request] = paused.requests
        delegates = await _delegates(app, request)
        for who, expected in (("alice", True), ("boss", True), ("leafy", False), ("eve", False)):
            for run_id, thread_id in delegates:
                assert await _sees(app, who, run_id, thread_id) == (expected, expected), (who, run_id)
        done = await app.decide(request.request_id, Approve(), principal="boss")
        assert done.run.status == "completed"
        for who, expected in (("alice", True), ("boss", True), ("leafy", False), ("eve", False)):
            for run_id, thread_id in delegates:
                assert await _sees(app, who, run_id, thread_id) == (expected, expected), (who, run_id)


async def test_a_routed_approver_sees_the_delegates_runs_and_threads_while_the_tree_waits_on_them(
    tmp_path: Path,
) -> None:
    """rita, named by the delegate's rule, reads each delegate's run and thread while the chat waits on her decision,
    and neither once she decided."""
    async with _team(tmp_path, {"name": "run_sql", "approvers": ["rita"]}) as app:
        paused = await app.run("how many orders?", agent="coordinator", principal="alice")
        [request] = paused.requests
        delegates = await _delegates(app, request)
        for run_id, thread_id in delegates:
            assert await _sees(app, "rita", run_id, thread_id) == (True, True)
        assert (await app.decide(request.request_id, Approve(), principal="rita")).run.status == "completed"
        for run_id, thread_id in delegates:
            assert await _sees(app, "rita", run_id, thread_id) == (False, False)
