"""The `RunStore` contract for long histories, on memory, SQLite and PostgreSQL.

A long history is decoded through a trusted schema without pydantic-ai's Python callbacks
(`_store/_trusted.py`); whatever it stores must read back exactly as pydantic-ai's own adapter
decodes the same JSON: every kind of part sayso keeps, and the shapes only pydantic-ai's callbacks
decode (legacy retry parts, usage with keys of its own, parts of a registered or unknown tool kind).
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

import pytest
from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    FilePart,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    ToolSearchCallPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from sayso._store import RunStore
from sayso._store._messages import TRUSTED_FROM, encode_messages
from sayso._store._trusted import trusted_validator

from .test_contract import ME, NOW, begin, said

AT = datetime(2026, 1, 1, tzinfo=UTC)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def turns(n: int) -> list[ModelMessage]:
    """`n` long prior turns: enough of them make the history long enough for the trusted schema."""
    return [m for i in range(n) for m in said(f"question {i} " + "q" * 400, f"answer {i} " + "a" * 800)]


def everything() -> list[ModelMessage]:
    """One of each kind of message part sayso keeps in a thread: prompts, files, thinking, tools, retries."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart(content="be brief", timestamp=AT),
                UserPromptPart(
                    content=[
                        "look",
                        ImageUrl(url="https://example.com/a.png"),
                        BinaryContent(PNG, media_type="image/png"),
                    ],
                    timestamp=AT,
                ),
            ],
            timestamp=AT,
            instructions="answer in French",
            run_id="run_1",
            metadata={"source": "test"},
        ),
        ModelResponse(
            parts=[
                ThinkingPart(content="hmm", signature="sig", provider_name="anthropic"),
                TextPart(content="let me check", provider_details={"k": [1, 2]}),
                ToolCallPart(tool_name="lookup", args={"q": "x", "n": [1, {"deep": None}]}, tool_call_id="call_1"),
                ToolCallPart(tool_name="raw", args='{"a": 1}', tool_call_id="call_2"),
                NativeToolCallPart(
                    tool_name="web_search", args={"query": "y"}, tool_call_id="nat_1", provider_name="openai"
                ),
                NativeToolReturnPart(
                    tool_name="web_search",
                    content={"hits": 3},
                    tool_call_id="nat_1",
                    timestamp=AT,
                    provider_name="openai",
                ),
                FilePart(content=BinaryContent(PNG, media_type="image/png")),
            ],
            usage=RequestUsage(input_tokens=12, output_tokens=7, details={"reasoning_tokens": 5}),
            model_name="gpt-x",
            timestamp=AT,
            provider_name="openai",
            provider_response_id="resp_1",
            finish_reason="tool_call",
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="lookup", content={"rows": [1, 2]}, tool_call_id="call_1", metadata={"m": 1}, timestamp=AT
                ),
                ToolReturnPart(
                    tool_name="raw",
                    content="bad args",
                    tool_call_id="call_2",
                    outcome="retried",
                    retry=RetryInfo(cause="validation_error", attempt=1),
                    timestamp=AT,
                ),
                RetryFeedbackPart(content="try again", retry=RetryInfo(cause="no_output", attempt=1), timestamp=AT),
            ],
            timestamp=AT,
        ),
        ModelResponse(parts=[TextPart(content="done")], timestamp=AT),
    ]


def only_pydantic_ai_decodes() -> list[list[ModelMessage]]:
    """Shapes the trusted schema leaves to pydantic-ai's adapter, one per history."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic-ai deprecates the class: old histories still hold it
        legacy_retry = RetryPromptPart(content="bad args", tool_name="lookup", tool_call_id="call_1", timestamp=AT)
    usage = RequestUsage(input_tokens=3)
    usage.provider_counter = 9  # type: ignore[attr-defined]  # a key of its own: pydantic-ai keeps it as an attribute
    return [
        [ModelRequest(parts=[legacy_retry], timestamp=AT)],
        [ModelResponse(parts=[TextPart(content="x")], usage=usage, timestamp=AT)],
        [
            ModelResponse(
                parts=[ToolCallPart(tool_name="t", args={}, tool_call_id="c", tool_kind="acme.kind")], timestamp=AT
            )
        ],
        [ModelResponse(parts=[ToolSearchCallPart(args={"queries": ["files"]}, tool_call_id="c")], timestamp=AT)],
        # parts a message's own check looks at (the speaker, a summary's provider), which the trusted schema skips
        [ModelRequest(parts=[SpeechPart(speaker="user", transcript="hello")], timestamp=AT)],
        [ModelResponse(parts=[SpeechPart(speaker="assistant", transcript="hi")], timestamp=AT)],
        [ModelRequest(parts=[CompactionPart(content="earlier, we spoke of files")], timestamp=AT)],
        [ModelResponse(parts=[CompactionPart(content="s", id="c1", provider_name="anthropic")], timestamp=AT)],
    ]


def as_pydantic_ai_decodes(messages: list[ModelMessage]) -> list[ModelMessage]:
    return ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))


async def stored(store: RunStore, messages: list[ModelMessage]) -> list[ModelMessage]:
    """`messages` written as one run's segment, then read back as the next run's history (and checked against
    `load_messages`)."""
    first = await begin(store)
    assert first.run is not None
    await store.finish_run(
        first.run, holder=ME, new_messages=messages, status="completed", output="x", error=None, now=NOW + 1
    )
    second = await begin(store, "run_2", now=NOW + 2)
    assert await store.load_messages("thr_1") == second.history
    return second.history


async def test_a_long_history_of_every_part_reads_back_as_pydantic_ai_decodes_it(store: RunStore) -> None:
    """A history long enough for the trusted schema, holding every kind of part, reads back equal to what was
    written and to pydantic-ai's own decode of it."""
    messages = turns(150) + everything() + turns(150)
    assert len(encode_messages(messages)) >= TRUSTED_FROM
    history = await stored(store, messages)
    assert history == as_pydantic_ai_decodes(messages)
    prompt, response, returns = history[300].parts[1], history[301], history[302]
    assert isinstance(prompt, UserPromptPart) and isinstance(prompt.content[2], BinaryContent)
    assert prompt.content[2].data == PNG and response.parts[-1].content.data == PNG  # type: ignore[union-attr]
    assert [type(p) for p in response.parts] == [type(p) for p in everything()[1].parts]
    assert isinstance(returns, ModelRequest) and returns.parts[0].content == {"rows": [1, 2]}  # type: ignore[union-attr]
    assert returns.parts[1].retry == RetryInfo(cause="validation_error", attempt=1)  # type: ignore[union-attr]


@pytest.mark.parametrize("case", range(len(only_pydantic_ai_decodes())))
async def test_shapes_only_pydantic_ai_decodes_read_back_as_it_decodes_them(store: RunStore, case: int) -> None:
    """A long history holding a legacy retry part, usage with a key of its own, a part of a registered or unknown
    tool kind, a speech or a compaction part reads back as pydantic-ai decodes it (the legacy part translated, the
    key kept, the typed part typed, the speaker and the summary checked)."""
    messages = turns(300) + only_pydantic_ai_decodes()[case]
    assert len(encode_messages(messages)) >= TRUSTED_FROM
    history = await stored(store, messages)
    want = as_pydantic_ai_decodes(messages)
    assert history == want
    assert [type(p) for p in history[-1].parts] == [type(p) for p in want[-1].parts]
    assert vars(getattr(history[-1], "usage", None) or RequestUsage()) == vars(
        getattr(want[-1], "usage", None) or RequestUsage()
    )


def test_the_trusted_schema_takes_what_sayso_writes_and_leaves_the_rest_to_pydantic_ai() -> None:
    """What sayso writes decodes through the trusted schema (not through pydantic-ai's slower callbacks), equal to
    pydantic-ai's decode; each shape only pydantic-ai decodes is refused by it, so the adapter decodes it."""
    trusted = trusted_validator()
    assert trusted is not None, "pydantic-ai's message schema changed shape: long histories decode at the old speed"
    body = encode_messages(turns(2) + everything())
    assert trusted.validate_json(body) == ModelMessagesTypeAdapter.validate_json(body)
    for messages in only_pydantic_ai_decodes():
        with pytest.raises(ValueError):
            trusted.validate_json(encode_messages(messages))


def test_the_trusted_schema_runs_no_message_check_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long history sayso wrote decodes without calling a message's or a prompt's `__post_init__` (pydantic-ai
    checked each when it built it; one Python call per message was ~15 % of a decode); its adapter calls them."""
    body = encode_messages(turns(3) + everything())
    calls: list[str] = []
    for cls in (ModelRequest, ModelResponse, UserPromptPart):
        check = cls.__post_init__

        def counted(self: object, _check: object = check, _name: str = cls.__name__) -> None:
            calls.append(_name)
            _check(self)  # type: ignore[operator]

        monkeypatch.setattr(cls, "__post_init__", counted)
    trusted = trusted_validator()
    assert trusted is not None
    decoded = trusted.validate_json(body)
    assert calls == []
    assert decoded == ModelMessagesTypeAdapter.validate_json(body)
    assert {"ModelRequest", "ModelResponse", "UserPromptPart"} <= set(calls)


def test_fields_at_their_default_are_left_out_and_read_back_alike() -> None:
    """sayso writes a message without the fields that hold their default (about half the bytes of pydantic-ai's
    own JSON, so a long history decodes faster); the tags stay, and it reads back equal to what pydantic-ai's
    full JSON of the same messages reads back as, through the adapter and the trusted schema alike."""
    shapes = [m for history in only_pydantic_ai_decodes() for m in history]
    messages = turns(2) + everything() + shapes
    body, full = encode_messages(messages), ModelMessagesTypeAdapter.dump_json(messages)
    assert len(body) < 0.75 * len(full)
    assert b'"provider_details":null' not in body and b'"state":"complete"' not in body
    assert body.count(b'"part_kind":') == full.count(b'"part_kind":') and b'"tool_kind":"acme.kind"' in body
    # a typed part's own default (its base has none) stays: where its kind is not registered, the base reads it
    assert b'"tool_name":"search_tools"' in body
    want = ModelMessagesTypeAdapter.validate_json(full)
    assert ModelMessagesTypeAdapter.validate_json(body) == want
    trusted = trusted_validator()
    assert trusted is not None
    plain = encode_messages(turns(2) + everything())
    assert trusted.validate_json(plain) == ModelMessagesTypeAdapter.validate_json(
        ModelMessagesTypeAdapter.dump_json(turns(2) + everything())
    )
