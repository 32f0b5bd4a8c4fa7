"""A2A 0.3 calls answered as JSON-RPC says: bad params as -32602 naming the fields, and a delete's `result: null`.

The a2a-sdk's 0.3 adapter (`a2a.compat.v0_3`) answers params that do not fit its models with
*invalid request* (-32600) and pydantic's whole report as `data` (inputs and
`errors.pydantic.dev` links included), and writes its answers with `exclude_none`, so a
`tasks/pushNotificationConfig/delete` answer, whose result is null, has no `result` at all, which
no JSON-RPC client reads as a success. The endpoint checks a 0.3 call's params here first, against
the adapter's own models, and puts the `result` back on that answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.server.jsonrpc_models import InvalidParamsError, InvalidRequestError
from a2a.server.request_handlers.response_helpers import build_error_response
from pydantic import BaseModel, ValidationError
from starlette.responses import JSONResponse, Response

NULL_RESULT_METHODS = frozenset({"tasks/pushNotificationConfig/delete"})
"""The 0.3 methods whose success result is null, which the adapter leaves out."""

MAX_PROBLEMS = 5
"""How many wrong fields one error names; the rest are counted."""


def params_refusal(method: str, request_id: str | int | None, call: Mapping[str, object]) -> JSONResponse | None:
    """The JSON-RPC error answering a 0.3 call that does not fit its method's model, or `None`.

    Params that do not fit are *invalid params* (-32602); anything else of the call (its `id`'s
    type) *invalid request* (-32600). The message names each field and what is wrong with it, and
    repeats none of the input.
    """
    model = cast("type[BaseModel] | None", JSONRPC03Adapter.METHOD_TO_MODEL.get(method))
    if model is None or not isinstance(call.get("params", {}), dict | list):
        return None  # no 0.3 method, or params that are no structure at all: the SDK's invalid request
    try:
        model.model_validate(call)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        said = [f"{'.'.join(str(p) for p in e['loc']) or 'the call'}: {e['msg']}" for e in errors[:MAX_PROBLEMS]]
        if len(errors) > MAX_PROBLEMS:
            said.append(f"and {len(errors) - MAX_PROBLEMS} more")
        in_params = all(e["loc"][:1] == ("params",) for e in errors)
        message = f"{'invalid params' if in_params else 'invalid request'} for {method!r}: {'; '.join(said)}"
        error = InvalidParamsError(message=message) if in_params else InvalidRequestError(message=message)
        return JSONResponse(build_error_response(request_id, error))  # answered 200, as the SDK answers its errors
    return None


def with_null_result(method: str, response: Response) -> Response:
    """The adapter's answer to a 0.3 call, with `result: null` put back where its result is null."""
    if method not in NULL_RESULT_METHODS or not isinstance(response, JSONResponse):
        return response
    body = json.loads(bytes(response.body))
    if not isinstance(body, dict) or "error" in body or "result" in body:
        return response
    body["result"] = None
    return JSONResponse(body, status_code=response.status_code)
