"""REST refuses the sizes the config's `limits:` names, as the CLI and Python do, with a 413; and a decision body
says what it means (a client tool's result names its value)."""

from __future__ import annotations

from sayso import Config, load_config

from ..conftest import EXAMPLE
from .conftest import InProcess, ServerFactory, helper_models

TOO_LARGE = "https://sayso.dev/problems/too-large"
TOOLS = [{"name": "get_location", "description": "Where the person is", "parameters": {"type": "object"}}]


def _with_limits(config: Config, **limits: int) -> Config:
    return config.model_validate({**config.model_dump(), "limits": limits, "base_dir": config.base_dir})


async def test_a_message_within_the_configured_limit_runs_and_one_over_it_is_a_413(serve: ServerFactory) -> None:
    """`limits.message_chars` raised to 200,000: a 150,000-character message starts a run over REST (it was a 422
    naming REST's own 100,000); one over the configured limit is a 413 too-large problem, as documented."""
    server = await serve(config=_with_limits(load_config(EXAMPLE), message_chars=200_000))
    async with server.client() as client:
        taken = await client.post("/v1/runs", json={"message": "list " + "x" * 150_000})
        assert taken.status_code == 200, taken.text
        refused = await client.post("/v1/runs", json={"message": "x" * 200_001})
        streamed = await client.post("/v1/runs?stream=true", json={"message": "x" * 200_001})
    assert (refused.status_code, refused.json()["type"]) == (413, TOO_LARGE)
    assert "the limit is 200000" in refused.json()["detail"]
    assert (streamed.status_code, streamed.json()["type"]) == (413, TOO_LARGE)


async def test_a_message_over_the_default_limit_is_a_413_not_a_422(server: InProcess) -> None:
    """Without a `limits:` block the message limit is 100,000 characters, refused as too large."""
    async with server.client() as client:
        refused = await client.post("/v1/runs", json={"message": "x" * 100_001})
    assert (refused.status_code, refused.json()["type"]) == (413, TOO_LARGE)


async def test_a_long_reason_is_taken_as_on_the_cli_and_one_over_the_answer_limit_is_a_413(
    serve: ServerFactory,
) -> None:
    """A 20,000-character reason (REST capped reasons at 10,000 while the CLI and Python took it) is recorded; a
    reason over `limits.answer_bytes` is a 413 and the request stays open."""
    server = await serve()
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        taken = await client.post(
            f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "reject", "reason": "n" * 20_000}
        )
        assert (taken.status_code, taken.json()["recorded"]) == (200, True)
    small = await serve(config=_with_limits(load_config(EXAMPLE), answer_bytes=500))
    async with small.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = run["requests"][0]["id"]
        for body in ({"kind": "reject", "reason": "n" * 600}, {"kind": "skip", "reason": "n" * 600}):
            refused = await client.post(f"/v1/requests/{request_id}/decision", json=body)
            assert (refused.status_code, refused.json()["type"]) == (413, TOO_LARGE)
        assert (await client.get(f"/v1/requests/{request_id}")).json()["status"] == "open"


async def test_a_long_client_error_is_taken_and_a_result_without_a_value_is_refused(
    serve: ServerFactory, helper_config: Config
) -> None:
    """A client tool's 20,000-character error is recorded (REST capped it at 10,000); a `client_result` that forgot
    its `value` is a 422 naming the field, the request staying open, while an explicit `null` is a value."""
    server = await serve(config=helper_config, models=helper_models())
    async with server.client() as client:
        failed = (await client.post("/v1/runs", json={"message": "locate", "client_tools": TOOLS})).json()
        body = {"kind": "client_error", "message": "e" * 20_000}
        taken = await client.post(f"/v1/requests/{failed['requests'][0]['id']}/decision", json=body)
        assert (taken.status_code, taken.json()["recorded"]) == (200, True)

        run = (await client.post("/v1/runs", json={"message": "locate", "client_tools": TOOLS})).json()
        request_id = run["requests"][0]["id"]
        forgot = await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "client_result"})
        assert forgot.status_code == 422
        assert "Field required" in forgot.text and "value" in forgot.text
        misnamed = await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "client_result", "result": 1})
        assert misnamed.status_code == 422  # `result` is an older name of the kind, not of the field
        assert (await client.get(f"/v1/requests/{request_id}")).json()["status"] == "open"
        null = await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "client_result", "value": None})
    assert null.json()["run"]["output"] == "You are at null"
