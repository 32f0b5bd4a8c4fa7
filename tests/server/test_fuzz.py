"""Fuzz the REST API, in-process, from its own OpenAPI document: no input makes the server fail (5xx)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err, Ok
from schemathesis.python.asgi import shutdown_lifespans
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from sayso import Sayso, load_config
from sayso.server import LiveSettings, create_app

from .conftest import EXAMPLE


@pytest.fixture(scope="module")
def fuzzed_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The example's server; schemathesis runs its lifespan in-process and calls it through an ASGI transport."""
    folder = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SAYSO_SANDBOX", str(folder / "sandbox"))
        patch.setenv("SAYSO_STORE", f"sqlite:///{folder / 'sayso.db'}")
        # Live streams end at once (after `ready`), so the events endpoint is fuzzed like the others.
        yield on_loopback(
            create_app(Sayso(load_config(EXAMPLE)), expire_every_seconds=None, live=LiveSettings(lasts=0))
        )
        shutdown_lifespans()


def on_loopback(app: FastAPI) -> Any:
    """The app as reached on 127.0.0.1: schemathesis's client names the host `testserver`, which local mode refuses."""

    async def shim(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [(k, v) for k, v in scope["headers"] if k != b"host"]
            scope = {**scope, "headers": [*headers, (b"host", b"127.0.0.1")]}
        await app(scope, receive, send)

    return shim


def test_no_input_makes_the_server_fail(fuzzed_app: Any) -> None:
    """Every generated request to every operation gets a documented answer that is not a 5xx."""
    # Schemathesis's pytest plugin does not run under pytest 9, so each operation's strategy is driven here.
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app)
    results = list(schema.get_all_operations())
    assert [result.err() for result in results if isinstance(result, Err)] == []  # every operation's schema reads
    operations = [result.ok() for result in results if isinstance(result, Ok)]
    assert len(operations) >= 10
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=40,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        )
        def check(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(checks=[not_a_server_error, response_schema_conformance, status_code_conformance])

        check()
