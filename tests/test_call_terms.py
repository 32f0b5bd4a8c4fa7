"""The terms of one call into the runtime: a host's remembered approvals, streamed text, cancelling a working run."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from sayso import Approve, RunConflict
from sayso._runtime import new_id

from .conftest import MakeApp, approvals, host_grant
from .models import tool_model
from .tools import delete_file, deleted

started = anyio.Event()
release = anyio.Event()


@pytest.fixture(autouse=True)
def reset() -> None:
    global started, release
    started, release = anyio.Event(), anyio.Event()


async def slow_export(name: str) -> str:
    """Export a file; waits until the test lets it finish."""
    started.set()
    await release.wait()
    return f"exported {name}"


def agents(**interrupt: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"tools": ["delete_file"], **interrupt}
    return {
        "files": {
            "model": "m",
            "tools": [delete_file, slow_export],
            "interrupt": settings,
        }
    }


def route(said: str) -> tuple[str, dict[str, Any]] | str:
    verb, _, name = said.partition(" ")
    if verb == "delete":
        return "delete_file", {"name": name}
    if verb == "export":
        return "slow_export", {"name": name}
    return "Hello there, friend."


def model() -> Any:
    return tool_model(route, read="Done: {result}")


async def test_a_host_that_remembers_nothing_is_offered_once_only_and_nothing_is_stored(make_app: MakeApp) -> None:
    """With a host's grants, only they count and sayso stores none; a host that keeps none is offered `once` only."""
    async with make_app(agents(remember="thread"), model=model()) as app:
        bare = await app.run("delete a.txt", agent="files", grants=(), offer_wider_scopes=False)
        assert approvals(bare.requests)[0].scopes == ("once",)

        hosted = await app.run("delete b.txt", agent="files", grants=())
        assert approvals(hosted.requests)[0].scopes == ("once", "thread")
        done = await app.answer_pause(
            hosted.run_id, {hosted.requests[0].request_id: Approve(scope="thread")}, grants=()
        )
        assert done.status == "completed" and deleted() == ["b.txt"]
        assert await app.grants() == [], "the host keeps remembered approvals; sayso stores none"

        grant = host_grant("delete_file", agent="files", thread_id=done.thread_id)
        again = await app.run("delete c.txt", thread_id=done.thread_id, grants=[grant])
    assert again.status == "completed" and deleted() == ["b.txt", "c.txt"], "the host's grant covers the call"


async def test_text_streams_to_the_caller_as_the_model_writes_it(make_app: MakeApp) -> None:
    """With `on_text`, each piece of the model's text reaches the caller before the run returns."""
    chunks: list[str] = []

    async def collect(chunk: str) -> None:
        chunks.append(chunk)

    async with make_app(agents(), model=model()) as app:
        result = await app.run("hi", agent="files", on_text=collect)
    assert len(chunks) > 1
    assert "".join(chunks) == result.output == "Hello there, friend."


async def test_cancelling_a_working_run_stops_it_and_frees_the_thread(make_app: MakeApp) -> None:
    """A working run cancelled by its runtime ends as cancelled, its tool never finishes, and the thread moves on."""
    async with make_app(agents(), model=model()) as app:
        run_id = new_id("run")
        outcome: list[object] = []

        async def work() -> None:
            outcome.append(await app.run("export a.txt", agent="files", thread_id="thr_cancel", run_id=run_id))

        async with anyio.create_task_group() as tg:
            tg.start_soon(work)
            await started.wait()
            assert (await app.run_record(run_id)).status == "running"
            cancelled = await app.cancel(run_id)
        release.set()
        assert cancelled.status == "cancelled"
        assert (await app.run_record(run_id)).status == "cancelled"
        assert deleted() == [], "the tool was stopped before it finished"
        with pytest.raises(RunConflict, match="cancelled"):
            await app.cancel(run_id)
        after = await app.run("hi", thread_id="thr_cancel")
    assert after.status == "completed"
