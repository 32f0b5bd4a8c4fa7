"""ask_user and client tools: what pauses, what is refused, and what the agent reads."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from sayso import Answer, ClientError, ClientResult, ClientTool, InvalidDecision, QuestionRequest, Sayso, Skip

from .conftest import MakeApp
from .models import Call, ToolModel, tool_model

PICK_COLOR = ClientTool(
    name="pick_color",
    description="Let the person pick a colour in the browser.",
    parameters={
        "type": "object",
        "properties": {"palette": {"type": "array", "items": {"type": "string"}}},
        "required": ["palette"],
    },
)
SECRET_TOOL = ClientTool(name="read_clipboard", description="Reads the clipboard.")

CALLS: dict[str, Call] = {
    "ask": (
        "ask_user",
        {
            "questions": [
                {"question": "Which file?", "choices": ["a.txt", "b.txt"]},
                {"question": "Which colours?", "choices": ["red", "blue"], "multiple": True},
            ]
        },
    ),
    "ask badly": ("ask_user", {"questions": "not a list"}),
    "pick": ("pick_color", {"palette": ["red", "green"]}),
    "pick badly": ("pick_color", {"palette": "red"}),
    "clipboard": ("read_clipboard", {}),
}
"""What the helper's model calls for each message; it then says what it read."""


@pytest.fixture
def app(make_app: MakeApp) -> Sayso:
    return make_app({"helper": {"model": "m", "client_tools": ["pick_color"]}}, model=tool_model(CALLS.__getitem__))


def seen(app: Sayso) -> list[ModelRequest]:
    """The last message of each request the helper's model answered, oldest first."""
    model = app.agent_model("helper")
    assert isinstance(model, ToolModel)
    return [asked.request for asked in model.asked]


def retries(app: Sayso) -> list[ToolReturnPart]:
    """Tool results that sent the model back to correct its call."""
    return [p for c in seen(app) for p in c.parts if isinstance(p, ToolReturnPart) and p.outcome == "retried"]


async def test_answers_reach_the_model_as_question_answer_pairs(app: Sayso) -> None:
    """Answers to ask_user reach the model as question-answer pairs, including own words and several choices for a
    multiple question."""
    async with app:
        paused = await app.run("ask")
        [request] = paused.requests
        assert isinstance(request, QuestionRequest)
        assert [q.question for q in request.questions] == ["Which file?", "Which colours?"]
        assert request.questions[1].multiple
        done = await app.decide(request.request_id, Answer(answers=(("b.txt",), ("red", "my own: teal"))))
    read = json.loads(done.run.output.removeprefix("model read: "))  # type: ignore[union-attr]
    assert read == [
        {"question": "Which file?", "answer": ["b.txt"]},
        {"question": "Which colours?", "answer": ["red", "my own: teal"]},
    ]


async def test_a_choice_and_own_words_for_a_single_choice_question_both_reach_the_model(app: Sayso) -> None:
    """Free text is always allowed beside a choice (kagent's ask_user); the model reads the choice and the words."""
    async with app:
        paused = await app.run("ask")
        [request] = paused.requests
        assert isinstance(request, QuestionRequest) and not request.questions[0].multiple
        done = await app.decide(request.request_id, Answer(answers=(("b.txt", "the 2024 copy"), ("red",))))
    read = json.loads(done.run.output.removeprefix("model read: "))  # type: ignore[union-attr]
    assert read[0] == {"question": "Which file?", "answer": ["b.txt", "the 2024 copy"]}


@pytest.mark.parametrize(
    ("answers", "problem"),
    [
        pytest.param((("a.txt",),), "expected 2 answer(s), one per question, got 1", id="count"),
        pytest.param((("a.txt",), ()), "question 'Which colours?' needs an answer", id="empty"),
        pytest.param(
            (("a.txt", "b.txt"), ("red",)),
            "question 'Which file?' takes one of its choices, got 2: 'a.txt', 'b.txt'",
            id="single",
        ),
    ],
)
async def test_wrong_answers_are_refused_and_the_pause_stays_open(
    app: Sayso, answers: tuple[tuple[str, ...], ...], problem: str
) -> None:
    """Answers of the wrong count, empty, or several for a single-choice question are refused naming the problem, and
    the question stays open."""
    async with app:
        paused = await app.run("ask")
        request_id = paused.requests[0].request_id
        with pytest.raises(InvalidDecision) as refused:
            await app.decide(request_id, Answer(answers=answers))
        assert refused.value.problem == problem
        still = await app.result(paused.run_id)
        assert [r.request_id for r in still.requests] == [request_id]
        done = await app.decide(request_id, Answer(answers=(("a.txt",), ("blue",))))
    assert done.run.status == "completed"


async def test_skipped_question_tells_the_model(app: Sayso) -> None:
    """A skipped question tells the model it was skipped and why."""
    async with app:
        paused = await app.run("ask")
        done = await app.decide(paused.requests[0].request_id, Skip(reason="not now"))
    assert done.run.output == "model read: Skipped: not now"


async def test_malformed_ask_user_arguments_go_back_to_the_model(app: Sayso) -> None:
    """Malformed ask_user arguments do not pause: they go back to the model as a retry naming the problem."""
    async with app:
        result = await app.run("ask badly")
    assert result.status == "completed"
    [retry] = retries(app)
    assert retry.tool_name == "ask_user"
    assert "Input should be a valid list" in str(retry.content)


async def test_client_tool_pauses_until_the_client_answers(app: Sayso) -> None:
    """A call to an allowed client tool pauses with its arguments, and the client's result is what the model reads."""
    async with app:
        paused = await app.run("pick", client_tools=[PICK_COLOR, SECRET_TOOL])
        [request] = paused.requests
        assert (request.kind, request.tool_name, request.args) == (
            "client_tool",
            "pick_color",
            {"palette": ["red", "green"]},
        )
        done = await app.decide(request.request_id, ClientResult(value={"picked": "green"}))
    assert done.run.output == 'model read: {"picked": "green"}'


async def test_client_tool_error_reaches_the_model(app: Sayso) -> None:
    """An error reported by the client reaches the model as a failed tool result carrying its message."""
    async with app:
        paused = await app.run("pick", client_tools=[PICK_COLOR])
        done = await app.decide(paused.requests[0].request_id, ClientError(message="the tab was closed"))
    assert done.run.status == "completed"
    last = seen(app)[-1].parts
    failed = [p for p in last if isinstance(p, ToolReturnPart) and p.tool_name == "pick_color"]
    assert failed and failed[0].outcome == "failed" and "the tab was closed" in str(failed[0].content)


async def test_client_tool_arguments_that_break_the_schema_go_back_to_the_model(app: Sayso) -> None:
    """Client tool arguments that break its parameter schema go back to the model as a retry instead of pausing."""
    async with app:
        result = await app.run("pick badly", client_tools=[PICK_COLOR])
    assert result.status == "completed"
    [retry] = retries(app)
    assert "palette: 'red' is not of type 'array'" in str(retry.content)


async def test_agent_never_sees_client_tools_it_is_not_allowed(app: Sayso) -> None:
    """A client tool the agent is not allowed is unknown to it, even when the client offers it."""
    async with app:
        result = await app.run("clipboard", client_tools=[PICK_COLOR, SECRET_TOOL])
    assert result.status == "completed"
    [retry] = retries(app)
    assert "Unknown tool name: 'read_clipboard'. Available tools: 'ask_user', 'pick_color'" in str(retry.content)


async def test_client_tools_are_offered_again_on_resume(app: Sayso) -> None:
    """The client tools offered with a run are stored with it, so a resume can offer them again."""
    async with app:
        paused = await app.run("pick", client_tools=[PICK_COLOR])
        record = await app.store.get_run(paused.run_id)
        assert [t.name for t in record.client_tools] == ["pick_color"]
        await app.decide(paused.requests[0].request_id, ClientResult(value="red"))
