"""A JSON-RPC call whose method belongs to another A2A version than its `A2A-Version` header says, refused as such.

The a2a-sdk serves A2A 1.0's methods (`SendMessage`) and, beside them, A2A 0.3's (`message/send`) on one
endpoint, and checks each call's `A2A-Version` header (none means 0.3) against its method's version. A 0.3
method under a 1.0 header fails there as JSON-RPC's *internal error* (-32603: its 0.3 adapter has no code
for a version it does not speak), which tells a client its own mistake is the server's; a 1.0 method under
0.3 is refused as `VersionNotSupported` without naming the method. The endpoint asks here before it
dispatches, with the SDK's own rule (`validate_version`) and errors, and answers a method of the other
version as *method not found* in that version (-32601), naming the method, the version and the name to call.
"""

from __future__ import annotations

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.server.context import ServerCallContext
from a2a.server.jsonrpc_models import MethodNotFoundError as JsonRpcMethodNotFound
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, VERSION_HEADER
from a2a.utils.errors import MethodNotFoundError as MethodNotFound
from a2a.utils.errors import VersionNotSupportedError
from a2a.utils.version_validator import validate_version
from starlette.datastructures import Headers
from starlette.responses import JSONResponse

V1_NAMES = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
    "tasks/resubscribe": "SubscribeToTask",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
    "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}
"""Each A2A 0.3 method the SDK serves, and its A2A 1.0 name."""

V03_NAMES = {v1: v03 for v03, v1 in V1_NAMES.items()}
"""Each A2A 1.0 method that A2A 0.3 has, and its 0.3 name (`ListTasks` has none)."""

assert set(V1_NAMES) == set(JSONRPC03Adapter.METHOD_TO_MODEL), "the SDK serves other A2A 0.3 methods"
assert set(V03_NAMES) <= set(JsonRpcDispatcher.METHOD_TO_MODEL), "the SDK serves other A2A 1.0 methods"


@validate_version(PROTOCOL_VERSION_0_3)
async def _speaks_0_3(context: ServerCallContext) -> None:
    """Nothing: the SDK's decorator refuses a context whose header is no A2A 0.x."""


@validate_version(PROTOCOL_VERSION_1_0)
async def _speaks_1_0(context: ServerCallContext) -> None:
    """Nothing: the SDK's decorator refuses a context whose header is no A2A 1.x."""


async def _speaks(version: str, context: ServerCallContext) -> bool:
    try:
        await (_speaks_0_3 if version == PROTOCOL_VERSION_0_3 else _speaks_1_0)(context)
    except VersionNotSupportedError:
        return False
    return True


async def version_refusal(method: str, request_id: str | int | None, headers: Headers) -> JSONResponse | None:
    """The JSON-RPC error (a response) answering a call whose method is not of the A2A version it says, or `None`.

    A method of the other version is *method not found* in the version the call says (-32601, in that
    version's error shape), naming the name to call there or the header to send; a header naming no
    version served here is the SDK's `VersionNotSupported` (-32009).
    """
    v1 = method in JsonRpcDispatcher.METHOD_TO_MODEL
    if not v1 and method not in V1_NAMES:
        return None  # a method of neither version: the SDK answers it (-32601)
    own, other = (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3) if v1 else (PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0)
    context = ServerCallContext(state={"headers": dict(headers)})
    if await _speaks(own, context):
        return None
    said = headers.get(VERSION_HEADER)
    says = f"says {VERSION_HEADER} {said!r}" if said else f"has no {VERSION_HEADER} header, which means {other}"
    if not await _speaks(other, context):
        unknown = VersionNotSupportedError(
            message=f"the call {says}, and this endpoint speaks A2A {PROTOCOL_VERSION_1_0} and "
            f"{PROTOCOL_VERSION_0_3}: {method!r} is an A2A {own} method, send {VERSION_HEADER}: {own}"
        )
        return JSONResponse(build_error_response(request_id, unknown))
    there = V03_NAMES.get(method) if v1 else V1_NAMES[method]
    instead = f"in A2A {other} call {there!r}" if there else f"A2A {other} has none"
    message = f"{method!r} is an A2A {own} method, and the call {says}: {instead}, or send {VERSION_HEADER}: {own}"
    # The error in the shape of the version the call says: a 1.0 client reads its error details.
    error = MethodNotFound(message=message) if other == PROTOCOL_VERSION_1_0 else JsonRpcMethodNotFound(message=message)
    return JSONResponse(build_error_response(request_id, error))  # answered 200, as the SDK answers its errors
