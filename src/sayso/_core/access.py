"""Who may do what: the one authorization rule every interface applies, as pure functions.

See docs/guides/rest.md#who-may-call.

A principal is who calls: a name and the agents it approves for. Threads belong to the
principal that started them. The rule, whichever interface asks (Python, REST, A2A, AG-UI,
MCP, the web UI or the CLI):

- only a thread's owner sends messages into it;
- the owner, or an approver for the thread's root agent, sees the thread and decides its requests; a delegate's
  run and thread are seen by whoever sees the chat's run above them (its root agent is the chat's, not the delegate);
- a routed request (its rule names `approvers`, docs/guides/routing.md) is decided only by those
  approvers, and never by the principal whose message started the run unless the rule says
  `self_approval: true` (separation of duties); they see the request, in their inbox too;
- approvers read the audit log; a grant is seen and revoked by its principal, by who gave it, and by an
  admin (approver for `*`), who sees every grant;
- a grant is used only for the agent it was given for;
- closing open requests unanswered (a forced resume, a cancel) is the owner's, or deciding each of them;
- a request its caller may not see does not exist for them, whether they read it or decide it
  (`deciding.check_allowed`): only who sees it is told why they may not decide it.

In local development mode (no principals configured) the one caller is `local` and may do
everything. Nothing here does I/O: the runtime looks records up and asks these functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .grants import Grant
from .requests import Request
from .routing import Routing

LOCAL_NAME = "local"
"""The principal name used in local development mode and by the Python API by default."""


@dataclass(frozen=True, kw_only=True)
class Principal:
    """The authenticated caller: a person or a service."""

    name: str
    approver_for: tuple[str, ...] = ()
    """Agent names or globs whose requests this principal may decide on any thread."""
    local: bool = False
    """True in local development mode, where the one caller may do everything."""


LOCAL = Principal(name=LOCAL_NAME, local=True)
"""The caller in local development mode."""


def root_agent(agent_path: str) -> str:
    """The top-level agent of a path such as `coordinator/analyst`."""
    return agent_path.split("/", 1)[0]


def approves(principal: Principal, agent_path: str) -> bool:
    """Whether `principal` has the approver role for the root agent of `agent_path`."""
    if principal.local:
        return True
    root = root_agent(agent_path)
    return any(fnmatchcase(root, glob) for glob in principal.approver_for)


def may_see(principal: Principal, *, owner: str | None, agent_path: str) -> bool:
    """Whether `principal` may read a thread of `owner` and what it asks through `agent_path`."""
    return principal.local or (owner is not None and owner == principal.name) or approves(principal, agent_path)


def may_decide(principal: Principal, *, owner: str | None, agent_path: str, routing: Routing | None = None) -> bool:
    """Whether `principal` may decide a request raised on a thread of `owner` through `agent_path`.

    Unrouted, the same as `may_see`, so what an inbox lists is exactly what its reader may decide.
    """
    return refusal(principal, owner=owner, agent_path=agent_path, routing=routing) is None


def refusal(principal: Principal, *, owner: str | None, agent_path: str, routing: Routing | None = None) -> str | None:
    """Why `principal` may not decide such a request, in the words every interface says; `None`: they may.

    In local development mode the one caller decides everything, routed requests too, alone.
    """
    if principal.local:
        return None
    if routing is not None:
        return routing.refusal(principal.name, starter=owner)
    if may_see(principal, owner=owner, agent_path=agent_path):
        return None
    return f"{principal.name!r} may not decide requests of this thread"


def skip_refusal(principal: Principal, waiting: Iterable[Request]) -> tuple[Request, str] | None:
    """Why `principal` may not close one of `waiting` unanswered (a forced resume, a cancel, a resume leaving it out).

    The thread's owner may: a message of theirs skips every open request too. Anyone else skips only what
    they may decide: an approver of one routed request never closes the others of the run. `None`: they may.
    """
    for request in waiting:
        if principal.local or principal.name == request.principal:
            continue
        why = refusal(principal, owner=request.principal, agent_path=request.agent_path, routing=request.routing)
        if why is not None:
            return request, why
    return None


def may_see_request(principal: Principal, *, owner: str | None, agent_path: str, routing: Routing | None) -> bool:
    """Whether `principal` may read a request: whoever sees its thread, and whoever may decide it."""
    return may_see(principal, owner=owner, agent_path=agent_path) or (
        routing is not None and routing.refusal(principal.name, starter=owner) is None
    )


def seen_by(principal: Principal, requests: Iterable[Request]) -> list[Request]:
    """The requests of `requests` that `principal` may read (`may_see_request`), in order.

    What a thread or a run they see shows them of its open requests: an approver of one routed request
    following the owner's thread is never shown the owner's other requests, which answer them 404.
    """
    return [
        r for r in requests if may_see_request(principal, owner=r.principal, agent_path=r.agent_path, routing=r.routing)
    ]


def may_message(principal: Principal, *, owner: str) -> bool:
    """Whether `principal` may send a message into a thread of `owner`: only its owner may.

    An approver decides requests on other people's threads but never speaks in them: a message
    would skip the owner's open requests and run the agent as the intruder.
    """
    return principal.local or owner == principal.name


def may_read_audit(principal: Principal) -> bool:
    """Whether `principal` may read the audit log and run expiry: approvers only."""
    return principal.local or bool(principal.approver_for)


def sees_every_grant(principal: Principal) -> bool:
    """Whether `principal` sees and revokes every grant, not only its own (an admin: approver for `*`)."""
    return principal.local or "*" in principal.approver_for


def grant_sight(principal: Principal) -> str | None:
    """The name whose grants `principal` sees (those letting its calls through, or given by it); `None`: every grant.

    The one rule `sees_grant` applies, and a store applies in its query when it lists grants.
    """
    return None if sees_every_grant(principal) else principal.name


def sees_grant(principal: Principal, grant: Grant) -> bool:
    """Whether `principal` sees and revokes `grant`: whose calls it lets through, who gave it, or an admin.

    An approver who chose "Always allow" on someone else's request can take that back.
    """
    sight = grant_sight(principal)
    return sight is None or sight in (grant.principal, grant.giver)


def approved_agents(principal: Principal, agents: list[str]) -> list[str] | None:
    """The configured agents `principal` approves for; `None` means every agent."""
    if principal.local or "*" in principal.approver_for:
        return None
    return [a for a in agents if approves(principal, a)]


def sees_as_approver(principal: Principal, waiting: Iterable[Request]) -> bool:
    """Whether `principal` may decide one of a paused run's open routed requests.

    Such an approver sees the run and its thread while they wait, so it answers over A2A and AG-UI too.
    """
    return any(
        r.routing is not None and r.routing.refusal(principal.name, starter=r.principal) is None for r in waiting
    )
