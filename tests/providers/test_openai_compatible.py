"""The files example on a real provider path: pydantic-ai's OpenAIChatModel over HTTP to an OpenAI-compatible server.

The server (`fake_openai.py`) runs on 127.0.0.1 in this process; the model reaches it through
the `openai` SDK exactly as it would reach Ollama or llama.cpp at their `base_url`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pydantic_ai.models
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.providers.openai import OpenAIProvider

from sayso import Answer, ApprovalRequest, Approve, QuestionRequest, Reject, Sayso

from ..conftest import EXAMPLE
from .fake_openai import FakeOpenAI, serving

KEY = "sk-fake-for-tests"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """The fake server, with model requests allowed and its key in the environment."""
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("FAKE_LLM_KEY", KEY)
    with serving(FakeOpenAI(api_key=KEY)) as server:
        yield server


@pytest.fixture
def config(tmp_path: Path, fake: FakeOpenAI) -> Path:
    """The files example with its scripted model swapped for the fake server, as a `models:` provider entry."""
    for name in ("files_tools.py", "files_subjects.py"):
        shutil.copy(EXAMPLE.parent / name, tmp_path / name)
    entry = f"{{provider: openai, name: fake-files, base_url: '{fake.base_url}', api_key_env: FAKE_LLM_KEY}}"
    text = EXAMPLE.read_text().replace("demo: {scripted: script.yaml}", f"demo: {entry}")
    assert entry in text
    path = tmp_path / "sayso.yaml"
    path.write_text(text)
    return path


async def test_pause_and_approve_with_edits_over_http(config: Path, fake: FakeOpenAI, tmp_path: Path) -> None:
    """`delete notes` pauses; approved with edited arguments, the edited call runs and the model hears its result."""
    async with Sayso.from_yaml(config) as app:
        model = app.agent_model("files")
        assert isinstance(model, WrapperModel) and isinstance(model.wrapped, OpenAIChatModel)
        paused = await app.run("delete notes")
        assert paused.status == "paused"
        [request] = paused.requests
        assert isinstance(request, ApprovalRequest)
        assert (request.tool_name, request.args) == ("delete_file", {"name": "notes.txt"})
        done = await app.decide(request.request_id, Approve(edited_args={"name": "todo.md"}))
    assert (done.run.status, done.run.output) == ("completed", "Deleted todo.md.")
    sandbox = tmp_path / "sandbox"
    assert (sandbox / "notes.txt").exists() and not (sandbox / "todo.md").exists()
    assert fake.tool_messages()[-1] == "Deleted todo.md."
    assert fake.requests[0]["model"] == "fake-files"
    advertised = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert advertised == {"list_files", "read_file", "delete_file", "ask_user"}


async def test_reject_with_a_reason_reaches_the_model(config: Path, fake: FakeOpenAI, tmp_path: Path) -> None:
    """A rejection's reason is what the model reads as the call's result; the file stays."""
    async with Sayso.from_yaml(config) as app:
        paused = await app.run("delete notes")
        done = await app.decide(paused.requests[0].request_id, Reject(reason="I still need my notes"))
    assert done.run.status == "completed"
    assert "I still need my notes" in str(done.run.output)
    assert any("I still need my notes" in m for m in fake.tool_messages())
    assert (tmp_path / "sandbox" / "notes.txt").exists()


async def test_a_question_then_an_approval(config: Path, fake: FakeOpenAI, tmp_path: Path) -> None:
    """Two matches: the model asks which (ask_user), then asks approval for the one chosen."""
    async with Sayso.from_yaml(config) as app:
        asked = await app.run("delete report")
        [question] = asked.requests
        assert isinstance(question, QuestionRequest)
        assert question.questions[0].choices == ("report-2025.txt", "report-2026.txt")
        approval = await app.decide(question.request_id, Answer(answers=(("report-2025.txt",),)))
        [request] = approval.run.requests
        assert isinstance(request, ApprovalRequest) and request.args == {"name": "report-2025.txt"}
        done = await app.decide(request.request_id, Approve())
    assert done.run.output == "Deleted report-2025.txt."
    assert not (tmp_path / "sandbox" / "report-2025.txt").exists()


async def test_resume_from_another_process(config: Path, fake: FakeOpenAI, tmp_path: Path) -> None:
    """A pause left here is decided by `sayso decide` in another process, which calls the model and ends the run."""
    async with Sayso.from_yaml(config) as app:
        paused = await app.run("delete notes")
    request_id = paused.requests[0].request_id
    done = subprocess.run(
        [sys.executable, "-m", "sayso", "decide", str(config), request_id, "approve", "--json"],
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["status"], out["output"]) == ("completed", "Deleted notes.txt.")
    assert not (tmp_path / "sandbox" / "notes.txt").exists()
    assert fake.tool_messages()[-1] == "Deleted notes.txt."  # the other process's request reached this server
    async with Sayso.from_yaml(config) as app:
        assert (await app.result(paused.run_id)).output == "Deleted notes.txt."


async def test_a_wrong_key_fails_the_run_with_the_servers_answer(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server refusing the key fails the run with the provider's error, not a task-group wrapper."""
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-wrong")
    async with Sayso.from_yaml(config) as app:
        failed = await app.run("list")
    assert failed.status == "failed"
    assert str(failed.error).startswith("ModelAuthenticationError: status_code: 401")
    assert "bad key" in str(failed.error)


async def test_streamed_answers_carry_text_and_split_tool_calls(fake: FakeOpenAI, tmp_path: Path) -> None:
    """Streamed completions (text in pieces, arguments split across chunks) come out whole through pydantic-ai."""
    listed: list[str] = []

    def list_files(prefix: str = "") -> str:
        """List files."""
        listed.append(prefix)
        return "notes.txt\ntodo.md"

    model = OpenAIChatModel("fake-files", provider=OpenAIProvider(base_url=fake.base_url, api_key=KEY))
    agent = Agent(model, tools=[list_files])
    async with agent, agent.run_stream("list") as streamed:
        chunks = [text async for text in streamed.stream_text(delta=True, debounce_by=None)]
        messages = streamed.all_messages()
    assert "".join(chunks) == "Files in the sandbox:\nnotes.txt\ntodo.md"
    assert len(chunks) > 1
    assert listed == [""]
    calls = [p for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)]
    assert [(c.tool_name, c.args_as_dict()) for c in calls] == [("list_files", {})]
    assert all(body["stream"] is True for body in fake.requests)
