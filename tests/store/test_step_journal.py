"""The step journal's store contract on every backend (memory, SQLite, PostgreSQL): a step is marked once,
finished with its result, forgotten when its function raised, and two steps never share a record."""

from __future__ import annotations

from pathlib import Path

from sayso._core.audit_events import StepUnknownEvent
from sayso._core.steps import StepKey, StepRecord
from sayso._store import RunStore, SqlRunStore

NOW = 1_000.0


def key(name: str = "charge", occurrence: int = 1, *, run_id: str = "run_1", scope: str = "call_1") -> StepKey:
    return StepKey(run_id=run_id, scope=scope, name=name, occurrence=occurrence)


async def test_a_step_is_marked_once_and_finished_with_its_result(store: RunStore) -> None:
    """The first `begin_step` marks the step; every later one gets the record: started, then done with its JSON."""
    assert await store.begin_step(key(), NOW) is None
    assert await store.begin_step(key(), NOW + 1) == StepRecord(status="started", result=None)
    await store.finish_step(key(), b'{"receipt": "r-1"}', NOW + 2)
    assert await store.begin_step(key(), NOW + 3) == StepRecord(status="done", result=b'{"receipt": "r-1"}')


async def test_a_mark_that_need_not_reach_the_disk_is_still_a_mark(store: RunStore) -> None:
    """`durable=False` (an idempotent step) marks the step the same way; only when it reaches the disk differs."""
    assert await store.begin_step(key(), NOW, durable=False) is None
    assert await store.begin_step(key(), NOW, durable=False) == StepRecord(status="started", result=None)


async def test_steps_differ_by_run_scope_name_and_occurrence(store: RunStore) -> None:
    """Each part of the key makes another step: none of them sees the first one's record."""
    await store.begin_step(key(), NOW)
    await store.finish_step(key(), b"1", NOW)
    others = [key(occurrence=2), key("refund"), key(scope="call_2"), key(run_id="run_2")]
    for other in others:
        assert await store.begin_step(other, NOW) is None
    assert await store.begin_step(key(), NOW) == StepRecord(status="done", result=b"1")


async def test_a_forgotten_step_runs_again_and_a_finished_one_is_never_forgotten(store: RunStore) -> None:
    """`forget_step` drops a started mark (its function raised), never a finished step's record."""
    await store.begin_step(key(), NOW)
    await store.forget_step(key())
    assert await store.begin_step(key(), NOW) is None
    await store.finish_step(key(), b'"ok"', NOW)
    await store.forget_step(key())
    assert await store.begin_step(key(), NOW) == StepRecord(status="done", result=b'"ok"')


async def test_a_step_whose_result_was_not_json_says_why(store: RunStore) -> None:
    """`unrecorded` keeps the reason the result could not be stored, for every later run of the body."""
    await store.begin_step(key(), NOW)
    await store.finish_step(key(), b"returned a socket", NOW, status="unrecorded")
    assert await store.begin_step(key(), NOW) == StepRecord(status="unrecorded", result=b"returned a socket")


async def test_a_step_found_cut_off_is_marked_unknown_and_audited_once(store: RunStore) -> None:
    """`unknown` ends a step still started, with its audit record; a second finder writes nothing."""
    await store.begin_step(key(), NOW)
    await store.finish_step(key(), b"", NOW, status="unknown", audit=[unknown_event()])
    await store.finish_step(key(), b"", NOW, status="unknown", audit=[unknown_event()])
    assert await store.begin_step(key(), NOW) == StepRecord(status="unknown", result=None)
    assert [r.body for r in await store.audit_records()] == [unknown_event()]
    await store.finish_step(key(), b'"again"', NOW)  # an idempotent step runs again and finishes
    assert await store.begin_step(key(), NOW) == StepRecord(status="done", result=b'"again"')
    await store.finish_step(key(), b"", NOW, status="unknown", audit=[unknown_event()])
    assert len(await store.audit_records()) == 1


def unknown_event() -> StepUnknownEvent:
    return StepUnknownEvent(event="step_unknown", run_id="run_1", scope="call_1", step="charge", occurrence=1, at=NOW)


async def test_a_started_step_survives_a_reopened_store(tmp_path: Path) -> None:
    """A mark is on disk before the function runs: a store opened afresh (a restarted process) finds it started."""
    url = f"sqlite:///{tmp_path}/sayso.db"
    async with SqlRunStore(url) as store:
        assert await store.begin_step(key(), NOW) is None
    async with SqlRunStore(url) as store:
        assert await store.begin_step(key(), NOW) == StepRecord(status="started", result=None)
