"""Agent runs as a `Runner`: started, resumed and carried on as engine steps (`_step.execute`).

An agent's run begins with its message (and, when the message superseded a pause, that pause's
requests and skips, which the model reads first); it resumes by consuming its decided pause (the
approved calls marked in the ledger in the same commit, the history and grants read with it); a
run whose process died is carried on from the store, where its last segment began.
"""

from __future__ import annotations

from .._core.decisions import ClientResult, DecisionRecord
from .._core.requests import DelegateRequest
from .._store import Decided, RunRecord
from . import _step, _tree
from ._kernel import Kernel
from ._results import RunResult
from ._runner import CallOptions, Resume, Runs, Start, refuse_retry


class AgentRunner:
    """The `Runner` of an agent's run (a top-level run, a delegate's, a workflow agent node's)."""

    local = True
    reads_grants = True
    durable_start = True
    claims_with_decision = True

    def __init__(self, k: Kernel, runs: Runs) -> None:
        self._k = k
        self._runs = runs

    def check(self, name: str) -> None:
        self._k.built(name)  # an agent that does not exist, or fails to build, is refused here

    async def start(self, run: RunRecord, start: Start, options: CallOptions) -> RunResult:
        k = self._k
        built = k.built(run.agent)
        if start.superseded is not None:
            requests, decisions = start.superseded
            await _step.tell_services(k, built, requests, decisions)
            return await _step.execute(
                k, self._runs, built, run, options=options, prompt=start.prompt, requests=requests, decisions=decisions
            )
        return await _step.execute(
            k,
            self._runs,
            built,
            run,
            options=options,
            prompt=start.prompt,
            requests=[],
            decisions={},
            history=start.history,
            stored_grants=start.stored_grants,
        )

    async def resume(self, run: RunRecord, resume: Resume, options: CallOptions) -> RunResult:
        # The answers of delegates are already in the store (`answer_below`); the approved calls'
        # ledger marks go with the pause's consumption, before any of them runs.
        k = self._k
        pause, plan = resume.pause, resume.plan
        claim = await _step.consume(
            k,
            run,
            pause.requests,
            plan.resume,
            now=plan.now,
            executing=plan.approved,
            load_history=True,
            grants_of=run.principal or "",
        )
        built = k.built(claim.run.agent)
        await _step.tell_services(k, built, pause.requests, plan.resume.decisions)
        return await _step.execute(
            k,
            self._runs,
            built,
            claim.run,
            options=options,
            prompt=None,
            requests=pause.requests,
            decisions=plan.resume.decisions,
            marked=frozenset(plan.approved),
            history=claim.history,
            stored_grants=claim.grants,
        )

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        k = self._k
        built = k.built(run.agent)
        if run.resume_pause_id is None:
            return await _step.execute(
                k, self._runs, built, run, options=options, prompt=run.prompt, requests=[], decisions={}, redo=True
            )
        state = await k.store.pause_state(run.resume_pause_id)
        # The run's own pause: its prompt is already in history. A pause of the run this one
        # superseded: the new message still has to be sent.
        prompt = None if state.run_id == run.run_id else run.prompt
        return await _step.execute(
            k,
            self._runs,
            built,
            run,
            options=options,
            prompt=prompt,
            requests=state.requests,
            decisions=state.decisions,
            redo=True,
        )

    async def answer_below(self, request: DelegateRequest, outcome: RunResult) -> DecisionRecord:
        # A delegate's answer is recorded at once: the parent may still wait on other calls.
        k = self._k
        record = DecisionRecord(
            request_id=request.request_id,
            decision=ClientResult(value=await _tree.delegate_answer(k, outcome)),
            by="system",
            principal=None,
            decided_at=k.clock(),
        )
        await k.store.add_decisions([record])
        return record

    async def resume_decided(self, decided: Decided, options: CallOptions) -> RunResult:
        # The decision's commit consumed the pause, marked the approved calls and read the history.
        k = self._k
        assert decided.claim is not None and decided.verdict.record is not None and decided.verdict.resume is not None
        requests = decided.state.requests
        decisions = {**decided.state.decisions, decided.verdict.record.request_id: decided.verdict.record}
        built = k.built(decided.claim.run.agent)
        await _step.tell_services(k, built, requests, decisions)
        return await _step.execute(
            k,
            self._runs,
            built,
            decided.claim.run,
            options=options,
            prompt=None,
            requests=requests,
            decisions=decisions,
            marked=frozenset(decided.verdict.resume.executing),
            history=decided.claim.history,
            stored_grants=decided.claim.grants,
        )

    async def retry(self, run: RunRecord, options: CallOptions) -> RunResult:
        raise refuse_retry(run)
