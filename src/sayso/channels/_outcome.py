"""What one decision through a channel did, in words: counted or not, where a quorum stands, whether the run went on.

A channel tells its person what happened, never what it hoped: the decide verb's answer
(`DecideResult.recorded` and `.quorum`, as REST's answer says it: docs/guides/routing.md#quorum) and
the request as it stands after it (decided, and whether its pause was consumed, the run carried on)
are the only sources. A mailed link's page and Slack's replies both say it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.decisions import Approve, Decision, Reject
from .._runtime import DecideResult, RequestState, Sayso
from ..exceptions import SaysoError


@dataclass(frozen=True)
class Said:
    """What a person is told of their decision."""

    title: str
    """A heading: `Approved`, `Vote counted`, `Not counted`."""
    text: str
    """What happened, whole sentences."""
    decided: bool
    """This decision decided the request (a channel's message shows that outcome on its own)."""


async def told(sayso: Sayso, decision: Decision, done: DecideResult) -> Said:
    """What `decision` did, the request read again after it; a failed read still says the decision was taken.

    The decision is recorded before the read: a page or reply that said it failed would have the person
    decide again, or think nothing happened.
    """
    try:
        state = await sayso.request(done.request_id)
    except SaysoError:
        standing = f" Approvals: {done.quorum.text}." if done.quorum is not None else ""
        if done.recorded:
            return Said("Recorded", f"Your decision was recorded.{standing}", decided=False)
        return Said("Not counted", f"That decision was not counted: another came first.{standing}", decided=False)
    return outcome(decision, done, state)


def outcome(decision: Decision, done: DecideResult, state: RequestState) -> Said:
    """What `decision` did, from the decide verb's answer `done` and the request's `state` read after it."""
    standing = f" Approvals: {done.quorum.text}." if done.quorum is not None else ""
    if not done.recorded:
        if state.decision is not None and not state.decision.closed:
            who = f" by {state.decision.principal}" if state.decision.principal else ""
            said = f"This request was already decided ({state.decision.decision.kind}{who})."
        elif done.quorum is not None:
            said = "You already voted on this request, and one person's approvals count once."
        else:
            said = "That decision was already recorded."
        return Said("Not counted", f"{said} Nothing changed.{standing}", decided=False)
    if state.decision is None:  # a vote short of its quorum: the request stays open
        return Said("Vote counted", f"Your approval was counted.{standing} The agent waits for the others.", False)
    verb = "Rejected" if isinstance(decision, Reject) else "Approved"
    if isinstance(decision, Approve) and decision.edited_args is not None:
        verb = "Approved with edited arguments"
    if state.pause_status != "consumed":
        after = "The agent still waits for its other requests to be decided."
    else:
        after = {
            "completed": "The agent carried on and finished.",
            "paused": "The agent carried on and is waiting again.",
            "failed": "The agent carried on, and its run failed.",
            "running": "The agent is carrying on.",
        }.get(done.run.status, f"The agent carried on; its run is {done.run.status}.")
    return Said(verb, f"{verb}.{standing} {after}", decided=True)
