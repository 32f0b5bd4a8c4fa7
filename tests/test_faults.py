"""Fault injection (docs/concepts/durability.md): the deciding process is killed (SIGKILL) at every step boundary of
the cycle.

Each case pauses a run on one or two gated calls, then hands its decisions to a separate process
that is killed at one boundary: before or after recording a decision, before or after consuming
the pause (which marks the approved calls in the ledger), inside the approved call after its side
effect, before or after saving the run's end. A fresh runtime then recovers (`Sayso.recover`), the
person repeats any decision that never committed, and the suite checks what a user would: no
approved call ran twice, no rejected call ran, every decision that was given is recorded and
honoured, and the run finished. Cases are drawn from a seed over SQLite and PostgreSQL.

The test command runs `FAULT_CASES` cases (default 18: each boundary once per backend); `make faults`
runs many more and prints
the counts (`FAULT_REPORT` names a JSON file for them).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from sayso import Approve, Reject, Sayso, load_config
from sayso._store import store_from_url

from .store.conftest import DSN
from .tools import missing

CASES = int(os.environ.get("FAULT_CASES", "18"))
"""The default covers each boundary once on each backend."""
SEED = int(os.environ.get("FAULT_SEED", "13"))

TOOLS = '''
import os, signal

def delete_file(name: str) -> str:
    """Delete a file: one line in the marker per execution."""
    with open(os.environ["FAULT_MARKER"], "a") as marker:
        marker.write(name + "\\n")
        marker.flush()
        os.fsync(marker.fileno())
    if os.environ.get("FAULT_IN_TOOL") == name:
        os.kill(os.getpid(), signal.SIGKILL)
    return f"deleted {name}"
'''

CONFIG = """
models:
  demo: {scripted: script.yaml}
agents:
  files:
    model: demo
    tools: [fault_tools:delete_file]
    interrupt: {tools: [delete_file]}
"""

SCRIPT = """
name: faults
rules:
  - user: '^delete (?P<a>\\S+) and (?P<b>\\S+)$'
    calls:
      - {call: delete_file, args: {name: "{a}"}}
      - {call: delete_file, args: {name: "{b}"}}
  - {user: '^delete (?P<n>\\S+)$', call: delete_file, args: {name: "{n}"}}
  - {tool: delete_file, reply: "done: {result}"}
"""

BOUNDARIES = [
    ("record_decision", "before"),
    ("record_decision", "after"),
    ("record_decisions", "before"),
    ("record_decisions", "after"),
    ("consume_pause", "before"),
    ("consume_pause", "after"),
    ("tool", "during"),
    ("finish_run", "before"),
    ("finish_run", "after"),
]
"""Where the deciding process is killed: a store verb before or after it commits, or inside the approved call."""


@dataclass(frozen=True, kw_only=True)
class Case:
    """One run, its decisions, how they are given (one by one, or as one answer), and where the decider dies."""

    id: str
    backend: str
    calls: int
    approve: tuple[bool, ...]
    batch: bool
    verb: str
    when: str
    nth: int
    """Which call of `verb` is the fatal one (the second decision of two, say)."""


def draw(count: int, seed: int) -> list[Case]:
    """`count` cases from `seed`: every boundary, each backend, one or two calls, approvals and rejections."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for index in range(count):
        backend = ("sqlite", "postgres")[index % 2]
        verb, when = BOUNDARIES[(index // 2) % len(BOUNDARIES)]
        batch = verb == "record_decisions" or (verb != "record_decision" and rng.random() < 0.4)
        calls = 2 if batch else rng.choice((1, 2))
        approve = tuple(rng.random() < 0.7 for _ in range(calls))
        if verb == "tool" and not any(approve):
            approve = (True, *approve[1:])
        nth = rng.randint(1, calls) if verb == "record_decision" else 1
        cases.append(
            Case(
                id=f"{index:03d}-{backend}-{verb}-{when}",
                backend=backend,
                calls=calls,
                approve=approve,
                batch=batch,
                verb=verb,
                when=when,
                nth=nth,
            )
        )
    return cases


@dataclass
class Tally:
    """What the suite saw, for `make faults`."""

    cases: int = 0
    killed: int = 0
    """Cases whose decider was really killed (the rest never reached their boundary)."""
    double_executions: int = 0
    lost_decisions: int = 0
    rejected_but_ran: int = 0
    outcome_unknown: int = 0
    by_boundary: dict[str, int] = field(default_factory=dict[str, int])


TALLY = Tally()


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    """Print (and with `FAULT_REPORT`, write) the counts once the cases ran."""
    yield
    print(f"\nfault injection: {json.dumps(asdict(TALLY), sort_keys=True)}")
    if os.environ.get("FAULT_REPORT"):
        Path(os.environ["FAULT_REPORT"]).write_text(json.dumps(asdict(TALLY), indent=2, sort_keys=True))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One SQLite file and (with TEST_POSTGRES_DSN) one PostgreSQL database shared by the cases of each backend."""
    folder = tmp_path_factory.mktemp("faults")
    urls = {"sqlite": f"sqlite:///{folder / 'faults.db'}"}
    if DSN is None:
        yield urls
        return
    import asyncpg

    name = f"sayso_faults_{os.getpid()}"

    async def admin(statement: str) -> None:
        conn = await asyncpg.connect(DSN)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    anyio.run(admin, f'CREATE DATABASE "{name}"')
    urls["postgres"] = DSN.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield urls
    finally:
        anyio.run(admin, f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fault-config")
    (folder / "fault_tools.py").write_text(TOOLS)
    (folder / "sayso.yaml").write_text(CONFIG)
    (folder / "script.yaml").write_text(SCRIPT)
    return folder


@pytest.fixture(scope="module")
def deciders() -> Iterator[Any]:
    """Fresh processes to decide in, forked from a server that has sayso imported already (so each starts fast)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["sayso", "sayso._store", "sqlalchemy", "asyncpg", "aiosqlite"])
    yield context


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in draw(CASES, SEED)])
def test_a_decider_killed_at_any_boundary_loses_nothing_and_runs_nothing_twice(
    case: Case, stores: dict[str, str], workdir: Path, deciders: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed at its boundary, the decider leaves nothing a recovery and a repeated decision cannot finish:
    each approved call ran at most once, no rejected call ran, every decision is recorded, the run completed."""
    if case.backend not in stores:
        missing("TEST_POSTGRES_DSN is not set (scripts/test sets it)")
    marker = tmp_path / "marker"
    names = [f"f{n}-{tmp_path.name}" for n in range(case.calls)]
    env = {"FAULT_MARKER": str(marker), "SAYSO_STORE": stores[case.backend], "SAYSO_SANDBOX": str(tmp_path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    run_id, request_ids = anyio.run(_pause, workdir, names)
    if case.verb == "tool":
        env["FAULT_IN_TOOL"] = names[case.approve.index(True)]
    decider = deciders.Process(target=decide_then_die, args=(str(workdir), env, run_id, request_ids, case))
    decider.start()
    decider.join(120)
    assert decider.exitcode in (0, -signal.SIGKILL), decider.exitcode
    killed = decider.exitcode == -signal.SIGKILL
    outcome = anyio.run(_recover_and_finish, workdir, run_id, request_ids, case)
    ran = marker.read_text().splitlines() if marker.exists() else []
    runs = [ran.count(name) for name in names]
    cut_off = [yes and n == 0 for n, yes in zip(runs, case.approve, strict=True)]

    TALLY.cases += 1
    TALLY.killed += killed
    key = f"{case.verb}:{case.when}"
    TALLY.by_boundary[key] = TALLY.by_boundary.get(key, 0) + killed
    TALLY.double_executions += sum(max(0, n - 1) for n in runs)
    TALLY.rejected_but_ran += sum(n for n, yes in zip(runs, case.approve, strict=True) if not yes)
    TALLY.lost_decisions += outcome["lost"]
    TALLY.outcome_unknown += outcome["unknown"]

    assert all(n <= 1 for n in runs), runs
    assert all(n == 0 for n, yes in zip(runs, case.approve, strict=True) if not yes), runs
    assert outcome["lost"] == 0, outcome
    assert outcome["status"] == "completed", outcome
    # An approved call that never ran was marked and then cut off (the decider died after consuming the pause,
    # or inside another approved call of the same pause): it reads as unknown and never runs later.
    assert outcome["unknown"] >= sum(cut_off), (runs, outcome)
    if any(cut_off):
        assert killed and (case.verb, case.when) in (("consume_pause", "after"), ("tool", "during")), (runs, outcome)


def _app(workdir: Path, store: Any = None, *, clock: Callable[[], float] = time.time) -> Sayso:
    return Sayso(load_config(workdir / "sayso.yaml"), store=store, clock=clock)


async def _pause(workdir: Path, names: list[str]) -> tuple[str, list[str]]:
    async with _app(workdir) as app:
        result = await app.run("delete " + " and ".join(names))
    assert result.status == "paused" and len(result.requests) == len(names)
    return result.run_id, [r.request_id for r in result.requests]


class _Dying:
    """The store, wrapped so that the process is killed at one call of one verb, before or after it commits."""

    def __init__(self, inner: Any, case: Case) -> None:
        self._inner = inner
        self._case = case
        self._calls = 0

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name != self._case.verb:
            return found

        async def dying(*args: Any, **kwargs: Any) -> Any:
            self._calls += 1
            fatal = self._calls == self._case.nth
            if fatal and self._case.when == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            result = await found(*args, **kwargs)
            if fatal and self._case.when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return dying


def decide_then_die(workdir: str, env: dict[str, str], run_id: str, request_ids: list[str], case: Case) -> None:
    """The deciding process: give the case's decisions through a store that kills it at its boundary."""
    os.environ.update(env)

    async def decide() -> None:
        store = _Dying(store_from_url(env["SAYSO_STORE"]), case)
        async with _app(Path(workdir), store) as app:
            answers = zip(request_ids, case.approve, strict=True)
            decisions = {rid: Approve() if yes else Reject(reason="no") for rid, yes in answers}
            if case.batch:
                await app.answer_pause(run_id, decisions)
            else:
                for request_id, decision in decisions.items():
                    await app.decide(request_id, decision)

    anyio.run(decide)


async def _recover_and_finish(workdir: Path, run_id: str, request_ids: list[str], case: Case) -> dict[str, Any]:
    """What a person and a restarted server do next: recover, repeat what never committed, recover again."""
    # A clock a minute ahead (two leases' length), so what the dead process held has lapsed and a pause decided but
    # never resumed counts as stalled at once.
    async with _app(workdir, clock=lambda: time.time() + 60) as app:
        await app.recover()
        for request_id, yes in zip(request_ids, case.approve, strict=True):
            state = await app.request(request_id)
            if state.decision is None and state.pause_status == "open":
                await app.decide(request_id, Approve() if yes else Reject(reason="no"))
        for _ in range(20):
            if (await app.run_record(run_id)).status != "running":
                break
            await anyio.sleep(0.25)
            await app.recover()
        result = await app.result(run_id)
        lost = 0
        for request_id, yes in zip(request_ids, case.approve, strict=True):
            decision = (await app.request(request_id)).decision
            if (
                decision is None
                or decision.by != "person"
                or decision.decision.kind != ("approve" if yes else "reject")
            ):
                lost += 1
        events = [r.body["event"] for r in await app.audit_log() if r.body.get("request_id") in request_ids]
    return {
        "status": result.status,
        "output": result.output or result.error or "",
        "lost": lost,
        "unknown": events.count("outcome_unknown"),
    }
