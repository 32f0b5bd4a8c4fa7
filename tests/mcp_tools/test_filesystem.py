"""The official filesystem MCP server as a tool source: split bindings, hints on the card, every approval feature."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.console import Console

from sayso import ApprovalRequest, Approve, ConfigError, Reject, Sayso, load_config, request_json
from sayso.cli._render import request_panel
from sayso.protocols.ag_ui._mapping import interrupt

from ..conftest import ROOT
from ..models import Said, ToolModel, tool_model
from .conftest import FILESYSTEM_SERVER, MakeMcpApp, filesystem_server, needs_filesystem_server

pytestmark = needs_filesystem_server


def files_model(folder: Path) -> ToolModel:
    """`read NAME` and `write NAME TEXT` read and write files in `folder` through the filesystem server's tools."""

    def route(said: str) -> Said:
        verb, name, *text = said.split(" ", 2)
        if verb == "read":
            return "read_text_file", {"path": f"{folder}/{name}"}
        return "write_file", {"path": f"{folder}/{name}", "content": text[0]}

    return tool_model(route, read=lambda tool, result: f"{'read' if tool == 'read_text_file' else 'wrote'}: {result}")


SPLIT = [
    {"server": "files", "tools": ["read_text_file", "list_directory"]},
    {"server": "files", "tools": ["write_file"], "require_approval": True},
]


async def test_reads_run_freely_and_a_write_waits_then_runs_once(make_mcp_app: MakeMcpApp, sandbox: Path) -> None:
    """With reads bound free and writes gated, a read answers at once; a write pauses, and on approval writes once."""
    app = make_mcp_app({"files": filesystem_server(sandbox)}, {"a": {"mcp": SPLIT}}, model=files_model(sandbox))
    async with app:
        read = await app.run("read notes.txt")
        assert read.status == "completed"
        assert read.output == 'read: {"content": "remember the milk\\n"}'

        paused = await app.run("write todo.txt buy bread")
        assert paused.status == "paused"
        assert not (sandbox / "todo.txt").exists()
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest)
        assert request.tool_name == "write_file"
        assert request.args == {"path": f"{sandbox}/todo.txt", "content": "buy bread"}

        done = await app.decide(request.request_id, Approve())
        assert done.run.status == "completed"
        assert (sandbox / "todo.txt").read_text() == "buy bread"
        assert done.run.output == f'wrote: {{"content": "Successfully wrote to {sandbox}/todo.txt"}}'

        # The same approval again is a harmless no-op: nothing is written a second time.
        (sandbox / "todo.txt").write_text("changed since")
        again = await app.decide(request.request_id, Approve())
        assert not again.recorded
        assert (sandbox / "todo.txt").read_text() == "changed since"
        executed = [r.body for r in await app.audit_log() if r.body["event"] == "executed"]
        assert [(e["tool_name"], e["request_id"]) for e in executed] == [("write_file", request.request_id)]


async def test_the_approval_card_shows_the_servers_title_description_and_hints(
    make_mcp_app: MakeMcpApp, sandbox: Path
) -> None:
    """A gated MCP call's request carries the server's title, description and destructiveHint, on every interface."""
    app = make_mcp_app({"files": filesystem_server(sandbox)}, {"a": {"mcp": SPLIT}}, model=files_model(sandbox))
    async with app:
        paused = await app.run("write todo.txt x")
    [request] = paused.requests
    assert isinstance(request, ApprovalRequest)
    assert request.tool_info is not None
    assert request.tool_info.source == "mcp:files"
    assert request.tool_info.title == "Write File"
    assert request.tool_info.destructive is True
    assert request.tool_info.read_only is False
    assert request.tool_info.description is not None and "Create a new file" in request.tool_info.description
    assert request.hint == "Approval is required for tool(s): write_file"
    assert request_json(request)["tool"]["title"] == "Write File"
    assert interrupt(request).metadata["tool"]["destructive"] is True  # type: ignore[index]
    console = Console(width=200, record=True)
    console.print(request_panel(request))
    shown = console.export_text()
    assert "mcp:files · Write File: Create a new file" in shown
    assert "the tool's source says it may destroy data" in shown


async def test_read_only_hint_feeds_skip_read_only(make_mcp_app: MakeMcpApp, sandbox: Path) -> None:
    """A whole server bound with approval still lets its `readOnlyHint` tools run when `skip_read_only` is on."""
    agent = {"mcp": [{"server": "files", "require_approval": True}], "interrupt": {"skip_read_only": True}}
    app = make_mcp_app({"files": filesystem_server(sandbox)}, {"a": agent}, model=files_model(sandbox))
    async with app:
        read = await app.run("read notes.txt")
        write = await app.run("write todo.txt x")
    assert read.status == "completed"
    assert write.status == "paused"
    assert [r.tool_name for r in write.requests] == ["write_file"]


async def test_edited_arguments_remembered_approval_and_audit_on_an_mcp_tool(
    make_mcp_app: MakeMcpApp, sandbox: Path
) -> None:
    """Edit the proposed write, remember it for the thread, and the audit keeps proposed, approved and executed."""
    agent = {"mcp": SPLIT, "interrupt": {"remember": "thread"}}
    app = make_mcp_app({"files": filesystem_server(sandbox)}, {"a": agent}, model=files_model(sandbox))
    async with app:
        paused = await app.run("write todo.txt buy bread")
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest)
        assert request.scopes == ("once", "thread")
        assert request.subject is not None and request.subject.key == "tool:write_file"
        edited = {"path": f"{sandbox}/todo.txt", "content": "buy bread and milk"}
        done = await app.decide(request.request_id, Approve(edited_args=edited, scope="thread"))
        assert done.run.status == "completed"
        assert (sandbox / "todo.txt").read_text() == "buy bread and milk"

        # The remembered approval covers the next write on this thread: it runs without asking.
        later = await app.run("write later.txt soon", thread_id=paused.thread_id)
        assert later.status == "completed"
        assert (sandbox / "later.txt").read_text() == "soon"
        # A new thread asks again.
        other = await app.run("write other.txt no")
        assert other.status == "paused"
        assert not (sandbox / "other.txt").exists()

        log = [r.body for r in await app.audit_log()]
        assert await app.verify_audit() is None
        [grants] = [await app.grants()]
    decided = next(b for b in log if b["event"] == "decision" and b.get("by") == "person")
    assert decided["proposed_args"] == {"path": f"{sandbox}/todo.txt", "content": "buy bread"}
    assert decided["approved_args"] == edited
    executed = next(b for b in log if b["event"] == "executed" and b["request_id"] == request.request_id)
    assert executed["executed_args"] == edited
    by_permission = [b for b in log if b["event"] == "decision" and b.get("by") == "permission"]
    assert [b["approved_args"]["path"] for b in by_permission] == [f"{sandbox}/later.txt"]
    assert [(g.tool, g.scope) for g in grants] == [("write_file", "thread")]


async def test_a_rejected_write_never_reaches_the_server(make_mcp_app: MakeMcpApp, sandbox: Path) -> None:
    """Rejecting a gated MCP call leaves the folder untouched and the model reads the reason."""
    app = make_mcp_app({"files": filesystem_server(sandbox)}, {"a": {"mcp": SPLIT}}, model=files_model(sandbox))
    async with app:
        paused = await app.run("write todo.txt x")
        done = await app.decide(paused.requests[0].request_id, Reject(reason="not today"))
    assert done.run.output == "wrote: Declined: not today"
    assert not (sandbox / "todo.txt").exists()


async def test_the_same_tool_name_gated_on_one_server_and_free_on_another(
    make_mcp_app: MakeMcpApp, tmp_path: Path
) -> None:
    """Two servers offering `write_file` both stay callable, by `server___tool`, each with its binding's approval."""
    private, scratch = tmp_path / "private", tmp_path / "scratch"
    private.mkdir()
    scratch.mkdir()
    servers = {"private": filesystem_server(private), "scratch": filesystem_server(scratch)}
    bindings = [
        {"server": "private", "tools": ["write_file"], "require_approval": True},
        {"server": "scratch", "tools": ["write_file", "read_text_file"]},
    ]
    model = tool_model(
        lambda said: (f"{said}___write_file", {"path": f"{tmp_path / said}/a.txt", "content": said[0]}),
        read=lambda tool, result: f"{tool.split('___')[0]} done",
    )
    app = make_mcp_app(servers, {"a": {"mcp": bindings}}, model=model)
    async with app:
        seen = (await app.verify_tools())["a"]
        free = await app.run("scratch")
        gated = await app.run("private")
    assert sorted(seen) == ["private___write_file", "read_text_file", "scratch___write_file"]
    assert free.status == "completed" and (scratch / "a.txt").read_text() == "s"
    assert gated.status == "paused" and not (private / "a.txt").exists()
    assert [r.tool_name for r in gated.requests] == ["private___write_file"]


async def test_a_binding_naming_a_tool_the_server_lacks_is_a_clear_error(
    make_mcp_app: MakeMcpApp, sandbox: Path
) -> None:
    """Binding `delete_file`, which the filesystem server does not offer, is refused and says what the server offers."""
    bindings = [{"server": "files", "tools": ["read_text_file", "delete_file"]}]
    app = make_mcp_app({"files": filesystem_server(sandbox)}, {"a": {"mcp": bindings}}, model=files_model(sandbox))
    async with app:
        with pytest.raises(ConfigError, match=r"binds 'delete_file' on MCP server 'files', which does not offer it"):
            await app.verify_tools()
        failed = await app.run("read notes.txt")
    assert failed.status == "failed"


async def test_a_run_of_an_agent_with_a_bad_binding_fails_naming_the_tool(
    make_mcp_app: MakeMcpApp, sandbox: Path
) -> None:
    """The failed run's error is the binding's `ConfigError`, naming the missing tool and what the server offers."""
    bindings = [{"server": "files", "tools": ["read_text_file", "delete_file"]}]
    app = make_mcp_app({"files": filesystem_server(sandbox)}, {"a": {"mcp": bindings}}, model=files_model(sandbox))
    async with app:
        failed = await app.run("read notes.txt")
    assert failed.error is not None
    assert failed.error.startswith("ConfigError: agent 'a' binds 'delete_file' on MCP server 'files'")
    assert "read_text_file" in failed.error


async def test_the_example_runs_the_filesystem_server_on_its_sandbox(tmp_path: Path) -> None:
    """examples/mcp: reads answer at once and a write waits; the server runs here from the pinned npm package."""
    example = tmp_path / "example"
    shutil.copytree(ROOT / "examples" / "mcp", example, ignore=shutil.ignore_patterns("*.db*"))
    config = load_config(example / "sayso.yaml")
    server = config.mcp_servers["files"]
    assert server.model_dump()["args"][-1] == "sandbox"
    # The example starts the server with npx; the test runs the same package from the lock-pinned install.
    config.mcp_servers["files"] = server.model_copy(
        update={"command": "node", "args": [str(FILESYSTEM_SERVER), "sandbox"]}
    )
    async with Sayso(config) as app:
        read = await app.run("read notes.txt")
        listed = await app.run("list")
        write = await app.run("write todo.txt buy bread", thread_id=read.thread_id)
        assert write.status == "paused"
        done = await app.decide(write.requests[0].request_id, Approve(scope="thread"))
    assert read.output == '{"content": "remember the milk\\n"}'
    assert listed.output == '{"content": "[FILE] notes.txt"}'
    assert done.run.status == "completed"
    assert (example / "sandbox" / "todo.txt").read_text() == "buy bread"
