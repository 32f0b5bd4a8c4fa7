"""A2A JSON-RPC calls whose method is of another A2A version than their `A2A-Version` header says.

One endpoint serves A2A 1.0's methods and A2A 0.3's: a method of the other version is the client's
mistake, answered as a method not found in the version it says (never JSON-RPC's internal error),
naming the method, the version and what to call instead; nothing runs. An A2A 0.3 call's wrong params are
JSON-RPC's invalid params, naming the fields, and every 0.3 success has its `result`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from .a2a_helpers import user_message
from .conftest import ServerFactory

V03_MESSAGE = {"messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "list"}]}


@dataclass(frozen=True)
class Mismatch:
    id: str
    method: str
    params: dict[str, Any]
    headers: dict[str, str]
    code: int
    message: str


MISMATCHES = [
    Mismatch(
        "0.3-send-under-1.0",
        "message/send",
        {"message": V03_MESSAGE},
        {"A2A-Version": "1.0"},
        -32601,
        "'message/send' is an A2A 0.3 method, and the call says A2A-Version '1.0': "
        "in A2A 1.0 call 'SendMessage', or send A2A-Version: 0.3",
    ),
    Mismatch(
        "0.3-get-under-1.0",
        "tasks/get",
        {"id": "task-1"},
        {"A2A-Version": "1.0"},
        -32601,
        "'tasks/get' is an A2A 0.3 method, and the call says A2A-Version '1.0': "
        "in A2A 1.0 call 'GetTask', or send A2A-Version: 0.3",
    ),
    Mismatch(
        "1.0-send-under-0.3",
        "SendMessage",
        {"message": user_message("list")},
        {"A2A-Version": "0.3"},
        -32601,
        "'SendMessage' is an A2A 1.0 method, and the call says A2A-Version '0.3': "
        "in A2A 0.3 call 'message/send', or send A2A-Version: 1.0",
    ),
    Mismatch(
        "1.0-list-without-header",
        "ListTasks",
        {},
        {},
        -32601,
        "'ListTasks' is an A2A 1.0 method, and the call has no A2A-Version header, which means 0.3: "
        "A2A 0.3 has none, or send A2A-Version: 1.0",
    ),
    Mismatch(
        "no-such-version",
        "message/send",
        {"message": V03_MESSAGE},
        {"A2A-Version": "7.1"},
        -32009,
        "the call says A2A-Version '7.1', and this endpoint speaks A2A 1.0 and 0.3: "
        "'message/send' is an A2A 0.3 method, send A2A-Version: 0.3",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in MISMATCHES])
async def test_a_method_of_another_version_than_the_header_says_is_the_clients_error(
    serve: ServerFactory, case: Mismatch
) -> None:
    """A raw JSON-RPC call mixing versions gets a client's error naming the method and version; nothing runs."""
    server = await serve()
    body = {"jsonrpc": "2.0", "id": 7, "method": case.method, "params": case.params}
    async with server.client() as client:
        response = await client.post("/a2a/files", json=body, headers=case.headers)
        assert response.status_code == 200, response.text  # JSON-RPC errors ride a 200, as the a2a-sdk's do
        answer = response.json()
        assert answer["id"] == 7 and "result" not in answer
        assert (answer["error"]["code"], answer["error"]["message"]) == (case.code, case.message)
        assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_each_version_still_answers_its_own_methods(serve: ServerFactory) -> None:
    """`message/send` under 0.3 (or no header) and `SendMessage` under 1.0 both run the agent."""
    server = await serve()
    calls = [
        ("message/send", {"message": V03_MESSAGE}, {}),
        ("message/send", {"message": {**V03_MESSAGE, "messageId": "m-2"}}, {"A2A-Version": "0.3"}),
        ("SendMessage", {"message": user_message("list")}, {"A2A-Version": "1.0"}),
    ]
    async with server.client() as client:
        for method, params, headers in calls:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer = (await client.post("/a2a/files", json=body, headers=headers)).json()
            assert "result" in answer, answer
        assert len((await client.get("/v1/threads")).json()["threads"]) == 3


# --- A2A 0.3 answered as JSON-RPC says


async def call_0_3(client: Any, method: str, params: Any, request_id: int = 1) -> Any:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return (await client.post("/a2a/files", json=body)).json()


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        pytest.param("tasks/get", {"id": 5}, "params.id: Input should be a valid string", id="id-a-number"),
        pytest.param("tasks/get", {}, "params.id: Field required", id="id-missing"),
        pytest.param(
            "message/send",
            {"message": {"kind": "message"}},
            "params.message.messageId: Field required; params.message.parts: Field required",
            id="message-without-its-fields",
        ),
        pytest.param("tasks/cancel", {"id": ["x"]}, "params.id: Input should be a valid string", id="cancel-id-a-list"),
    ],
)
async def test_an_a2a_0_3_call_with_wrong_params_is_invalid_params_naming_the_fields(
    serve: ServerFactory, method: str, params: Any, says: str
) -> None:
    """Wrong params were -32600 with pydantic's whole report ("For further information visit https://errors.pydantic
    .dev/..."); JSON-RPC says -32602, and the message names each field and what is wrong, nothing more."""
    server = await serve()
    async with server.client() as client:
        error = (await call_0_3(client, method, params))["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(f"invalid params for {method!r}: ") and says in error["message"]
    assert "pydantic" not in str(error) and "input_value" not in str(error) and "data" not in error


async def test_an_a2a_0_3_push_config_delete_answers_a_null_result(serve: ServerFactory) -> None:
    """`tasks/pushNotificationConfig/delete` answered `{"id": 7, "jsonrpc": "2.0"}`, no `result`: no JSON-RPC
    client reads that as success. It answers `"result": null`, as A2A 1.0's `DeleteTaskPushNotificationConfig`."""
    server = await serve()
    async with server.client() as client:
        task = (
            await call_0_3(
                client,
                "message/send",
                {"message": {**V03_MESSAGE, "parts": [{"kind": "text", "text": "delete notes"}]}},
            )
        )["result"]
        config = {"id": "p1", "url": "https://1.1.1.1/hook", "token": "tok"}
        made = await call_0_3(
            client, "tasks/pushNotificationConfig/set", {"taskId": task["id"], "pushNotificationConfig": config}
        )
        assert "result" in made, made
        deleted = await call_0_3(
            client, "tasks/pushNotificationConfig/delete", {"id": task["id"], "pushNotificationConfigId": "p1"}, 7
        )
        assert deleted == {"jsonrpc": "2.0", "id": 7, "result": None}
        listed = await call_0_3(client, "tasks/pushNotificationConfig/list", {"id": task["id"]})
    assert listed["result"] == []
