"""The runtime's reading verbs (threads, runs, requests, the inbox, grants, the audit log).

`Sayso` inherits them; each resolves the caller to a `Principal` and applies the one access rule
of `sayso._core.access` before it reads the store port, so every interface sees the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._config.file import Config
from .._core import access
from .._core.access import LOCAL, Principal
from .._core.audit import AuditProblem, AuditRecord, AuditReport
from .._core.audit_events import ShownDecision
from .._core.grants import Grant
from .._core.requests import Request
from .._core.stats import Stats, summarize
from .._core.votes import Vote, quorum
from .._store import (
    GRANTS_READ_AT_ONCE,
    AuditPage,
    GrantPage,
    InboxFilter,
    InboxPage,
    RemoteTask,
    RequestState,
    RunPage,
    RunQuery,
    RunRecord,
    RunRequests,
    ThreadPage,
    ThreadRecord,
    ThreadSummary,
    TranscriptEntry,
    TranscriptPage,
)
from ..exceptions import (
    GrantNotFound,
    InvalidInput,
    NotAllowed,
    RequestNotFound,
    RunNotFound,
    ThreadNotFound,
    UsageError,
)
from . import _audit, _tree
from ._kernel import Kernel
from ._listing import PrincipalLike as PrincipalLike
from ._listing import inbox_page, principal_of

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


class Reading:
    """Reading verbs of the runtime, over `self._k` (a `Kernel`)."""

    _k: Kernel
    config: Config
    _open: bool

    def principal(self, who: PrincipalLike) -> Principal:
        """The principal a name stands for: its configured approver role, or the local caller in local mode."""
        return principal_of(self.config, who)

    # reading

    async def run_record(self, run_id: str, *, principal: PrincipalLike | None = None) -> RunRecord:
        """A run's stored record (status, thread, agent, parent); `RunNotFound` if the caller may not see it."""
        run = await self._k.store.get_run(run_id)
        if principal is not None:
            thread = await self._k.store.get_thread(run.thread_id)
            owner = thread.owner if thread else run.principal
            who = self.principal(principal)
            if not access.may_see(who, owner=owner, agent_path=run.path) and not await self._approves_in(who, run):
                raise RunNotFound(run_id)
        return run

    async def _approves_in(self, who: Principal, run: RunRecord | None) -> bool:
        """Whether `who` is an approver of an open routed request of `run`'s paused tree (docs/guides/routing.md)."""
        if run is None:
            return False
        top = await _tree.root(self._k, run)
        return top.status == "paused" and access.sees_as_approver(who, await _tree.open_leaves(self._k, top))

    async def run_requests(self, run_id: str, *, principal: PrincipalLike | None = None) -> RunRequests:
        """Every request a run and its delegates raised, oldest first, with the decisions taken.

        What a client renders a finished or waiting conversation from (A2A task history): the
        pauses and their answers, whichever interface answered them.
        """
        await self.run_record(run_id, principal=principal)
        return await _tree.tree_requests(self._k, run_id)

    async def remote_task(self, run_id: str, *, principal: PrincipalLike | None = None) -> RemoteTask | None:
        """The remote A2A task a remote delegate's run stands for; `None` for any other run."""
        await self.run_record(run_id, principal=principal)
        return await self._k.store.remote_task(run_id)

    async def thread(self, thread_id: str, *, principal: PrincipalLike | None = None) -> ThreadRecord:
        """A thread's record; `ThreadNotFound` when there is none or the caller may not see it.

        A delegate's thread is read by whoever reads the run whose call started it (and so the chat's run):
        its own agent is the delegate, whose approvers approve nothing of the chat.
        """
        record = await self._k.store.get_thread(thread_id)
        if record is None:
            raise ThreadNotFound(thread_id)
        if principal is not None:
            who = self.principal(principal)
            if record.parent_run_id is not None:
                try:
                    await self.run_record(record.parent_run_id, principal=who)
                except RunNotFound:
                    raise ThreadNotFound(thread_id) from None
            elif not access.may_see(who, owner=record.owner, agent_path=record.agent):
                active = await self._k.store.get_run(record.active_run_id) if record.active_run_id else None
                if not await self._approves_in(who, active):
                    raise ThreadNotFound(thread_id)
        return record

    async def threads(self, *, principal: PrincipalLike = access.LOCAL_NAME, limit: int = 50) -> list[ThreadSummary]:
        """The caller's newest `limit` threads, newest first (every thread in local mode); `thread_page` reads on."""
        return (await self.thread_page(principal=principal, limit=limit)).threads

    async def thread_page(
        self, *, principal: PrincipalLike = access.LOCAL_NAME, limit: int = 50, cursor: str | None = None
    ) -> ThreadPage:
        """The caller's threads, newest first, a page at a time: pass a page's `next_cursor` back for older ones.

        Raises:
            InvalidCursor: `cursor` is not the `next_cursor` of a page.
        """
        who = self.principal(principal)
        return await self._k.store.threads(owner=None if who.local else who.name, limit=limit, cursor=cursor)

    async def top_runs(
        self, query: RunQuery, *, principal: PrincipalLike, limit: int = 50, before: tuple[float, str] | None = None
    ) -> RunPage:
        """The caller's top-level runs `query` lists (A2A's tasks), newest update first, a page at a time.

        In the caller's threads (every one in local mode), as `thread_page` lists them; in `query.thread_id`
        only when the caller may see it (`thread`). `query.owner` is the caller's to set, not the query's.
        """
        who = self.principal(principal)
        owner = None if who.local else who.name
        if query.thread_id is not None:
            try:
                await self.thread(query.thread_id, principal=who)
            except ThreadNotFound:
                return RunPage(runs=[], more=False, total=0)
            owner = None
        return await self._k.store.top_runs(replace(query, owner=owner), limit=limit, before=before)

    async def messages(self, thread_id: str, *, principal: PrincipalLike | None = None) -> list[ModelMessage]:
        """A thread's whole history as pydantic-ai messages, oldest first."""
        await self.thread(thread_id, principal=principal)
        return await self._k.store.load_messages(thread_id)

    async def run_messages(self, run_id: str, *, principal: PrincipalLike | None = None) -> list[ModelMessage]:
        """The messages a run added to its thread, oldest first."""
        await self.run_record(run_id, principal=principal)
        return await self._k.store.run_messages(run_id)

    async def transcript(
        self, thread_id: str, *, principal: PrincipalLike | None = None, after_seq: int = 0
    ) -> list[TranscriptEntry]:
        """A thread's history as display entries (user and agent text, tool calls and results).

        While the thread's run works on a message it has stored nothing of yet (a run's messages are
        stored when it pauses or ends, which may take minutes), the history ends with that message,
        marked `pending`: so a reload, a second tab or any other reader shows what the person just
        said. It is here, in the reading verb, and not in one interface's thread view, so every
        interface reads the same history. `after_seq` reads on from a stored batch; a pending line is
        not stored, so each read that finds the run still working on its message ends with it, and a
        reader drops the one it held when it reads on.
        """
        record = await self.thread(thread_id, principal=principal)
        entries = await self._k.store.transcript(thread_id, after_seq=after_seq)
        return await self._with_votes(entries) + await self._pending_message(record, entries)

    async def transcript_page(
        self, thread_id: str, *, principal: PrincipalLike | None = None, limit: int = 200, cursor: str | None = None
    ) -> TranscriptPage:
        """A thread's newest `limit` lines before `cursor`, as `transcript` shows them: a long thread a page at a time.

        Pass a page's `next_cursor` back for the lines before it. The newest page ends with the pending
        message, as `transcript` does; a decision's vote lines come with it, beyond `limit`.

        Raises:
            InvalidCursor: `cursor` is not the `next_cursor` of a page.
        """
        record = await self.thread(thread_id, principal=principal)
        page = await self._k.store.transcript_page(thread_id, limit=limit, cursor=cursor)
        pending = await self._pending_message(record, page.entries) if cursor is None else []
        return replace(page, entries=await self._with_votes(page.entries) + pending)

    async def _with_votes(self, entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
        """`entries` with the votes toward each decision among them, before it."""
        decided = [e.decision["request_id"] for e in entries if e.decision and "request_id" in e.decision]
        votes = await self._k.store.votes(decided) if decided else {}
        voted = {r: found.request for r in votes if (found := await self._k.store.get_request(r)) is not None}
        return [line for e in entries for line in [*vote_lines(e, votes, voted), e]] if votes else entries

    async def _pending_message(self, thread: ThreadRecord, entries: Sequence[TranscriptEntry]) -> list[TranscriptEntry]:
        """The message of the thread's running run, as a pending line, while the run has stored no message.

        A run working again after a decision stored its message with its first segment: it has no line
        of its own. Read after the history, so a run that stored its messages meanwhile is never shown twice.
        """
        if thread.active_run_id is None:
            return []
        run = await self._k.store.get_run(thread.active_run_id)
        if run.status != "running" or not run.prompt or any(e.run_id == run.run_id for e in entries):
            return []
        if await self._k.store.run_messages(run.run_id):
            return []
        seq = await self._k.store.last_seq(thread.thread_id)
        return [
            TranscriptEntry(seq=seq, run_id=run.run_id, role="user", text=run.prompt, at=run.created_at, pending=True)
        ]

    async def last_seq(self, thread_id: str) -> int:
        """The position of a thread's newest stored message batch (0 for none)."""
        return await self._k.store.last_seq(thread_id)

    async def request(self, request_id: str, *, principal: PrincipalLike | None = None) -> RequestState:
        """A request, whether its pause still waits, and its decision if any."""
        state = await self._k.store.get_request(request_id)
        if state is None:
            raise RequestNotFound(request_id)
        if principal is not None and not access.may_see_request(
            self.principal(principal),
            owner=state.request.principal,
            agent_path=state.request.agent_path,
            routing=state.request.routing,
        ):
            raise RequestNotFound(request_id)
        return state

    async def inbox(
        self,
        query: InboxFilter | None = None,
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        limit: int = 50,
        cursor: str | None = None,
    ) -> InboxPage:
        """Open requests across threads that the caller may decide, oldest first, a page at a time."""
        who = self.principal(principal)
        return await inbox_page(self._k.store, self.config, who, query, now=self._k.clock(), limit=limit, cursor=cursor)

    async def open_requests(self, *, limit: int = 100) -> list[Any]:
        """Every open request across threads, oldest first."""
        return list(await self._k.store.open_requests(limit=limit))

    # grants and audit

    async def grants(self, *, principal: PrincipalLike | None = None) -> list[Grant]:
        """Active remembered approvals, newest first: the caller's own and those they gave (all: an admin, `None`)."""
        listed: list[Grant] = []
        cursor: str | None = None
        while True:
            page = await self.grant_page(principal=principal, limit=GRANTS_READ_AT_ONCE, cursor=cursor)
            listed += page.grants
            if (cursor := page.next_cursor) is None:
                return listed

    async def grant_page(
        self, *, principal: PrincipalLike | None = None, limit: int = 50, cursor: str | None = None
    ) -> GrantPage:
        """`grants`, a page at a time: pass a page's `next_cursor` back for older ones.

        The store lists what `access.grant_sight` names; `access.sees_grant` still decides what is shown.

        Raises:
            InvalidCursor: `cursor` is not the `next_cursor` of a grant page.
        """
        who = None if principal is None else self.principal(principal)
        sight = None if who is None else access.grant_sight(who)
        page = await self._k.store.grant_page(seen_by=sight, limit=limit, cursor=cursor)
        return page if who is None else replace(page, grants=[g for g in page.grants if access.sees_grant(who, g)])

    async def revoke_grant(self, grant_id: str, *, principal: PrincipalLike | None = None) -> Grant:
        """Revoke a remembered approval; the next call it covered asks again.

        Args:
            grant_id: the grant.
            principal: who asks: only the grant's principal, who gave it, or an admin may; `None` (Python) skips
                the check.

        Raises:
            GrantNotFound: no active grant the caller sees has this id.
        """
        who = self.principal(principal) if principal is not None else LOCAL
        if not access.sees_every_grant(who) and grant_id not in {g.grant_id for g in await self.grants(principal=who)}:
            raise GrantNotFound(grant_id)
        now = self._k.clock()
        revoked = await self._k.store.revoke_grant(
            grant_id,
            now=now,
            audit=[{"event": "grant_revoked", "grant_id": grant_id, "principal": who.name, "at": now}],
        )
        if revoked is None:
            raise GrantNotFound(grant_id)
        return revoked

    async def audit_log(self) -> list[AuditRecord]:
        """Every audit record, oldest first."""
        return await self._k.store.audit_records()

    async def audit_page(
        self,
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        newest_first: bool = True,
        limit: int = 50,
        cursor: int | None = None,
    ) -> AuditPage:
        """One page of the audit log; approvers only."""
        self._require_approver(principal, "audit", "only approvers read the audit log")
        return await self._k.store.audit_page(newest_first=newest_first, limit=limit, cursor=cursor)

    async def audit_count(self) -> int:
        """How many records the audit log holds."""
        return await self._k.store.count_audit()

    async def verify_audit(self, *, principal: PrincipalLike | None = None) -> AuditProblem | None:
        """Check the audit chain; returns the first bad record, or `None` when intact (approvers only).

        See `audit_report` for what was checked (whether a key anchors the chain).
        """
        return (await self.audit_report(principal=principal)).problem

    async def anchor_audit(self) -> int:
        """Vouch once for audit records written before an audit key was configured, so signing can begin.

        Appends one signed `audit_anchored` record naming the last unsigned one; `verify` then accepts
        the unsigned records before it and requires a signature on every record after. Do this only for
        a log you trust as it stands. Returns how many records were vouched for (0: nothing to do).

        Raises:
            ConfigError: no audit key is configured.
        """
        self._check_open()
        head = await _audit.anchor(self._k)
        return head.seq if head is not None else 0

    async def audit_report(self, *, principal: PrincipalLike | None = None) -> AuditReport:
        """Verify the audit log and say what was checked (approvers only).

        Always the hash links; with an audit key also every record's signature, the store's checkpointed
        head and the exported head file. The report names the first bad record, and says plainly when no
        key anchors the chain.
        """
        if principal is not None:
            self._require_approver(principal, "audit", "only approvers may verify the audit log")
        return await _audit.report(self._k)

    async def stats(self, *, window_seconds: float = 7 * 86_400, principal: PrincipalLike | None = None) -> Stats:
        """How approvals went over the last `window_seconds` (approvers only).

        Time to decide (p50, p90) and approval, rejection, expiry and escalation rates, overall and per
        tool, rule and approver.

        Raises:
            InvalidInput: the window is not positive.
        """
        self._check_open()
        if principal is not None:
            self._require_approver(principal, "stats", "only approvers read the statistics")
        if not window_seconds > 0:
            raise InvalidInput(f"the window must be positive, not {window_seconds!r}", field="window")
        until = self._k.clock()
        # A window reaching past 1970 covers everything: it starts there, a time every edge can write.
        since = max(0.0, until - window_seconds)
        return summarize(await self._k.store.request_facts(since=since, until=until), since=since, until=until)

    def _require_approver(self, principal: PrincipalLike, subject_id: str, problem: str) -> None:
        who = self.principal(principal)
        if not access.may_read_audit(who):
            raise NotAllowed(subject_id, f"{who.name!r} is not an approver; {problem}", subject="approver")

    def _check_open(self) -> None:
        if not self._open:
            raise UsageError("use the runtime inside `async with Sayso(...) as app:` so its store is open")


def vote_lines(
    entry: TranscriptEntry, votes: Mapping[str, Sequence[Vote]], requests: Mapping[str, Request]
) -> list[TranscriptEntry]:
    """The votes before a decision line (docs/guides/routing.md#quorum), each a line of its own.

    The last vote is the one that decided: the decision line itself stands for it. Each says where the
    quorum stood after it (`vote 1 of 2`), as every other interface counts: approvals of those required.
    """
    request_id = entry.decision.get("request_id") if entry.decision else None
    cast = list(votes.get(request_id, ())) if request_id else []
    request = requests.get(request_id) if request_id else None
    if request is None or request.routing is None:
        return []
    lines: list[TranscriptEntry] = []
    for n, vote in enumerate(cast[:-1], 1):
        standing = quorum(request.routing, cast[:n], starter=request.principal, proposed=request.args)
        shown = ShownDecision(
            request_id=vote.request_id,
            decision=vote.decision,
            by="person",
            principal=vote.principal,
            decided_at=vote.voted_at,
            quorum=f"vote {standing.count}" + (" (an edit)" if vote.edited_args else ""),
        )
        if vote.via is not None:
            shown["via"] = vote.via
        if vote.reason:
            shown["reason"] = vote.reason
        lines.append(replace(entry, decision=shown, at=vote.voted_at))
    return lines
