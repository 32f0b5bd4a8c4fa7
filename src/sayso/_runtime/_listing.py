"""Who a caller is, and which open requests they may list: the inbox rule every interface shares.

`Sayso` and `Reader` (`_reading.Reading`) list the inbox through `inbox_page` over their store, and
`Inbox` (`_inbox`) over a store opened for nothing else; each resolves its caller with
`principal_of`. Both only read the config and the store's inbox port, so listing loads nothing of
the runtime's running parts.
"""

from __future__ import annotations

from dataclasses import replace

from .._config.file import Config
from .._core import access
from .._core.access import LOCAL, Principal
from .._store import InboxFilter, InboxPage, InboxPort

PrincipalLike = Principal | str
"""A caller: a `Principal`, or a name resolved against the configured principals."""


def principal_of(config: Config, who: PrincipalLike) -> Principal:
    """The principal a name stands for: its configured approver role, or the local caller in local mode."""
    if isinstance(who, Principal):
        return who
    if not config.principals:
        return LOCAL if who == access.LOCAL_NAME else Principal(name=who)
    for configured in config.principals:
        if configured.name == who:
            return Principal(name=who, approver_for=tuple(configured.approver_for))
    return Principal(name=who)


async def inbox_page(
    store: InboxPort,
    config: Config,
    who: Principal,
    query: InboxFilter | None,
    *,
    now: float,
    limit: int,
    cursor: str | None,
) -> InboxPage:
    """Open requests across threads that `who` may decide, oldest first, a page at a time, with routed ones' votes."""
    query = query or InboxFilter()
    if not who.local:
        # The inbox lists exactly what `access.may_decide` lets `who` decide: their threads, the agents they
        # approve for (`None`: every agent, for an approver for `*`), and routed requests they are named for.
        agents = access.approved_agents(who, [*config.agents, *config.workflows])
        query = replace(
            query, owner=who.name, approved_agents=agents or (), every_agent=agents is None, decider=who.name
        )
    page = await store.inbox(query, now=now, limit=limit, cursor=cursor)
    routed = [r.request_id for r in page.requests if r.routing is not None]
    return replace(page, votes=await store.votes(routed)) if routed else page
