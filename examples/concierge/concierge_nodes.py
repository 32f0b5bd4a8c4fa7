"""The concierge workflow of seed 004: ask for a city and tastes, propose activities, refine them with you.

```text
START → ask_preferences → propose (agent "planner") → get_user_feedback ─ done ──→ write_plan
                              ↑                              │
                              └──────────── revise ──────────┘
```

`ask_preferences` and `get_user_feedback` stop for a person with `RequestInput`; the answers
are validated against `Preferences` (the city is required) and `UserFeedback`. The loop runs
until the person ticks `done`. `sayso.yaml` next to this file declares the same graph in YAML;
`workflow` below is the Python form of it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Literal

from pydantic import BaseModel, Field

from sayso.workflows import START, AgentNode, RequestInput, Route, Workflow, WorkflowContext

INTRO = (
    "This is an interactive concierge: it makes you an itinerary for a day in the city of your choice. "
    "Tell it a little about yourself so it can personalise the plan: the city (required), your age, "
    "a hobby, an attraction you liked somewhere else, and the pace."
)
"""One paragraph: the terminal and the web UI wrap it to their width."""


class Preferences(BaseModel):
    """What the person tells the concierge; only the city is required."""

    city: str = Field(min_length=1, description="The city to spend the day in.")
    age: int | None = Field(default=None, ge=0, le=130, description="Your age.")
    hobby: str | None = Field(default=None, description="Something you enjoy doing.")
    liked_attraction: str | None = Field(default=None, description="An attraction you liked elsewhere.")
    pace: Literal["relaxed", "packed"] = Field(default="relaxed", description="How full the day should be.")


class Activity(BaseModel):
    """One item of the itinerary."""

    name: str
    description: str


class ActivitiesList(BaseModel):
    """The itinerary the planner proposes: its activities in order."""

    itinerary: list[Activity]


class UserFeedback(BaseModel):
    """What the person thinks of the proposal."""

    user_response: str = Field(description="Which items appeal to you, and what to change.")
    done: bool = Field(default=False, description="Tick when the itinerary is right as it is.")


class Revision(BaseModel):
    """What the planner gets back when the person wants changes."""

    city: str
    feedback: str
    itinerary: list[Activity]


class FinalPlan(BaseModel):
    """What the last node writes up."""

    city: str
    itinerary: list[Activity]
    notes: str


async def ask_preferences() -> AsyncGenerator[Any, Any]:
    """Ask for the city and the person's tastes; the answer (a `Preferences`) goes to the planner."""
    yield RequestInput(INTRO, response_schema=Preferences)


async def get_user_feedback(node_input: ActivitiesList, ctx: WorkflowContext) -> AsyncGenerator[Any, Any]:
    """Show the proposal and ask what appeals; loop back to the planner until the person is done."""
    message = (
        f"Here is your recommended itinerary ({len(node_input.itinerary)} activities). "
        "Which of these items appeal to you, and what should change? Tick 'done' when it is right."
    )
    feedback = yield RequestInput(message, payload=node_input, response_schema=UserFeedback)
    city = ctx.outputs["ask_preferences"]["city"]
    if feedback.done:
        yield Route("done", output=FinalPlan(city=city, itinerary=node_input.itinerary, notes=feedback.user_response))
    else:
        yield Route(
            "revise", output=Revision(city=city, feedback=feedback.user_response, itinerary=node_input.itinerary)
        )


def write_plan(node_input: FinalPlan) -> str:
    """Write the agreed itinerary up as the workflow's answer."""
    lines = [f"Your day in {node_input.city}", ""]
    lines += [f"{n}. {a.name}: {a.description}" for n, a in enumerate(node_input.itinerary, 1)]
    if node_input.notes:
        lines += ["", f"Your notes: {node_input.notes}"]
    return "\n".join(lines)


planner = AgentNode("planner", name="propose", output_type=ActivitiesList)

workflow = Workflow(
    "concierge",
    description="Plans a day out in a city with you, and refines it until you are happy.",
    edges=[
        (START, ask_preferences, planner, get_user_feedback),
        (get_user_feedback, {"revise": planner, "done": write_plan}),
    ],
)
