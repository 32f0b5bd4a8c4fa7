"""A2A over gRPC (`lf.a2a.v1.A2AService`): a2a-sdk's `GrpcHandler` in front of every entry's handler.

`sayso serve --grpc-port P` serves the same handlers as the JSON-RPC routes, so a task looks the
same either way: pauses, payloads, refusals and history. As in kagent, a call names its agent in
the request's `tenant` as `<namespace>/<name>` (`a2a.namespace`); a call without a tenant talks
to the configured entry. The HITL extension is requested with the `a2a-extensions` metadata key
(or A2A 0.3's `x-a2a-extensions`) and echoed back in the response's trailing metadata; a bearer
token in `authorization` metadata is the caller, exactly as over HTTP (the runtime's `authenticate`).
Server reflection is on, so `grpcurl` needs no proto files. Needs the `grpc` extra.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import grpc
import grpc.aio
from a2a.extensions.common import get_requested_extensions
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.grpc_handler import DefaultGrpcServerCallContextBuilder, GrpcHandler
from a2a.types import a2a_pb2, a2a_pb2_grpc
from a2a.utils.errors import A2A_ERROR_REASONS, A2AError
from a2a.utils.grpc_status import status_to_grpc
from google.protobuf import empty_pb2
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]  # googleapis-common-protos ships no types
from grpc_reflection.v1alpha import reflection

from ..._runtime import Sayso, authenticate
from ...exceptions import Unauthenticated
from ._handler import ACTIVATED_STATE, CALLER_STATE, SaysoRequestHandler
from ._mapping import HITL_URI, is_unavailable

EXTENSION_KEYS = ("a2a-extensions", "x-a2a-extensions")
"""The metadata keys that name extensions: A2A 1.0's, and A2A 0.3's older name (gRPC keys are lowercase)."""


class _Unauthenticated(A2AError):
    """A call without a valid bearer token: answered `UNAUTHENTICATED` before any handler runs."""


class _ContextBuilder(DefaultGrpcServerCallContextBuilder):
    """The SDK's context, plus the caller and whether the HITL extension is activated (then echoed)."""

    def __init__(self, sayso: Sayso) -> None:
        self.sayso = sayso

    def build(self, context: grpc.aio.ServicerContext[Any, Any]) -> ServerCallContext:
        built = super().build(context)
        metadata = _metadata(context)
        built.requested_extensions = get_requested_extensions(
            [value for key in EXTENSION_KEYS for value in metadata.get(key, [])]
        )
        authorization = metadata.get("authorization", [None])[0]
        try:
            built.state[CALLER_STATE] = authenticate(self.sayso, authorization)
        except Unauthenticated as exc:
            raise _Unauthenticated(message=exc.problem) from None
        activated = HITL_URI in built.requested_extensions
        built.state[ACTIVATED_STATE] = activated
        if activated:
            context.set_trailing_metadata((("a2a-extensions", HITL_URI),))
        return built


def _metadata(context: grpc.aio.ServicerContext[Any, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in context.invocation_metadata() or ():
        out.setdefault(key.lower(), []).append(value if isinstance(value, str) else value.decode())
    return out


class _EntryHandler(GrpcHandler):
    """The SDK's gRPC handler of one entry; a call without a valid token is `UNAUTHENTICATED`."""

    async def abort_context(self, error: A2AError, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        if isinstance(error, _Unauthenticated):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, error.message)
        if is_unavailable(error):
            await _abort_unavailable(error, context)
        await super().abort_context(error, context)


async def _abort_unavailable(error: A2AError, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    """`UNAVAILABLE` (gRPC clients retry it), still carrying the SDK's ErrorInfo: its clients read an A2A error."""
    info = error_details_pb2.ErrorInfo(
        reason=A2A_ERROR_REASONS[type(error)], domain="a2a-protocol.org", metadata=error.data or {}
    )
    status = status_pb2.Status(code=grpc.StatusCode.UNAVAILABLE.value[0], message=error.message)
    status.details.add().Pack(info)
    rich = status_to_grpc(status)
    context.set_trailing_metadata((*(context.trailing_metadata() or ()), *rich.trailing_metadata))
    await context.abort(rich.code, rich.details)


class TenantRouter(a2a_pb2_grpc.A2AServiceServicer):
    """`lf.a2a.v1.A2AService`: each call goes to the entry its `tenant` names (`<namespace>/<name>`)."""

    def __init__(self, sayso: Sayso, handlers: Mapping[str, SaysoRequestHandler]) -> None:
        self.namespace = sayso.config.a2a.namespace
        self.entry = sayso.config.entry_name
        builder = _ContextBuilder(sayso)
        self.handlers = {name: _EntryHandler(handler, context_builder=builder) for name, handler in handlers.items()}

    async def _entry(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> GrpcHandler:
        tenant: str = getattr(request, "tenant", "")
        namespace, _, name = tenant.partition("/") if tenant else (self.namespace, "/", self.entry)
        handler = self.handlers.get(name) if namespace == self.namespace else None
        if handler is None:
            known = ", ".join(f"{self.namespace}/{n}" for n in self.handlers)
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no agent is served as tenant {tenant!r} (served: {known})")
        assert handler is not None
        return handler

    async def SendMessage(
        self, request: a2a_pb2.SendMessageRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.SendMessageResponse:
        return await (await self._entry(request, context)).SendMessage(request, context)

    async def SendStreamingMessage(
        self, request: a2a_pb2.SendMessageRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[a2a_pb2.StreamResponse]:
        async for item in (await self._entry(request, context)).SendStreamingMessage(request, context):
            yield item

    async def SubscribeToTask(
        self, request: a2a_pb2.SubscribeToTaskRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[a2a_pb2.StreamResponse]:
        async for item in (await self._entry(request, context)).SubscribeToTask(request, context):
            yield item

    async def GetTask(
        self, request: a2a_pb2.GetTaskRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.Task:
        return await (await self._entry(request, context)).GetTask(request, context)

    async def ListTasks(
        self, request: a2a_pb2.ListTasksRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.ListTasksResponse:
        return await (await self._entry(request, context)).ListTasks(request, context)

    async def CancelTask(
        self, request: a2a_pb2.CancelTaskRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.Task:
        return await (await self._entry(request, context)).CancelTask(request, context)

    async def CreateTaskPushNotificationConfig(
        self, request: a2a_pb2.TaskPushNotificationConfig, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.TaskPushNotificationConfig:
        return await (await self._entry(request, context)).CreateTaskPushNotificationConfig(request, context)

    async def GetTaskPushNotificationConfig(
        self, request: a2a_pb2.GetTaskPushNotificationConfigRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.TaskPushNotificationConfig:
        return await (await self._entry(request, context)).GetTaskPushNotificationConfig(request, context)

    async def ListTaskPushNotificationConfigs(
        self, request: a2a_pb2.ListTaskPushNotificationConfigsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.ListTaskPushNotificationConfigsResponse:
        return await (await self._entry(request, context)).ListTaskPushNotificationConfigs(request, context)

    async def DeleteTaskPushNotificationConfig(
        self, request: a2a_pb2.DeleteTaskPushNotificationConfigRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> empty_pb2.Empty:
        return await (await self._entry(request, context)).DeleteTaskPushNotificationConfig(request, context)

    async def GetExtendedAgentCard(
        self, request: a2a_pb2.GetExtendedAgentCardRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> a2a_pb2.AgentCard:
        return await (await self._entry(request, context)).GetExtendedAgentCard(request, context)


async def start_grpc(
    sayso: Sayso, handlers: Mapping[str, SaysoRequestHandler], *, host: str, port: int
) -> tuple[grpc.aio.Server, int]:
    """A started gRPC server for `handlers` on `host:port` (in the running event loop, beside uvicorn), and its port.

    The port is the one it listens on: with port 0, the one the system picked.
    """
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(TenantRouter(sayso, handlers), server)  # type: ignore[no-untyped-call]
    # Server reflection, so `grpcurl` works without the proto files, as against kagent's controller.
    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"].full_name
    reflection.enable_server_reflection((service, reflection.SERVICE_NAME), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    return server, bound
