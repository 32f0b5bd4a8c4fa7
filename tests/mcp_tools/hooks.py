"""Before-call hooks and a tool for the hook tests, named by import spec from their configs."""

from __future__ import annotations

import os

import httpx

from sayso import AskApproval, HookCall, VisitUrl

seen: list[HookCall] = []
"""Every call the hooks below were asked about, in order."""


async def sign_in_first(call: HookCall) -> VisitUrl | None:
    """Seed 002's login example: no tool runs until the person has signed in to the CRM."""
    seen.append(call)
    crm = os.environ["CRM_URL"]
    async with httpx.AsyncClient() as client:
        session = (await client.get(f"{crm}/session", params={"user": call.principal})).json()
    if session["signed_in"]:
        return None
    return VisitUrl(message="Sign in to the CRM first", url=f"{crm}/login?user={call.principal}")


def second_pair_of_eyes(call: HookCall) -> AskApproval | None:
    """Every call that mentions "everyone" waits for a person, whatever the tool."""
    seen.append(call)
    if "everyone" in str(call.args) and not call.approved:
        return AskApproval(hint="This reaches everyone: a second pair of eyes, please.", payload={"rule": "everyone"})
    return None


sent: list[str] = []


def announce(text: str) -> str:
    """Send an announcement."""
    sent.append(text)
    return f"announced: {text}"


def not_a_hook(first: str, second: str) -> None:
    """Takes two arguments, so it cannot be a hook."""
