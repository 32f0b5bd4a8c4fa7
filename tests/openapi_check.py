"""Every JSON answer of the REST API checked against the server's own OpenAPI document.

`InProcess.client()` installs `OpenApiCheck` as a response hook, so every test that talks REST
also checks that what it was sent is what the OpenAPI document promises: the documented models
are the one source of truth, and an undocumented field or a wrong type fails the test that met it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from fastapi import FastAPI
from jsonschema import Draft202012Validator

JSON_MEDIA = ("application/json", "application/problem+json")


class OpenApiCheck:
    """Checks responses of one app against its OpenAPI document (read once, on the first response)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self._routes: list[tuple[re.Pattern[str], str, dict[str, Any]]] | None = None
        self.checked = 0

    def _operations(self) -> list[tuple[re.Pattern[str], str, dict[str, Any]]]:
        if self._routes is None:
            doc = self.app.openapi()
            self._components = doc.get("components", {})
            self._routes = [
                (re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", path) + "$"), method.upper(), operation)
                for path, item in doc["paths"].items()
                for method, operation in item.items()
            ]
        return self._routes

    def schema_for(self, method: str, path: str, status: int, media: str) -> dict[str, Any] | None:
        """The documented schema of this answer; `None` when the path is not in the document (A2A, AG-UI, MCP)."""
        for pattern, documented_method, operation in self._operations():
            if documented_method == method and pattern.match(path):
                responses = operation["responses"]
                response = responses.get(str(status)) or responses.get("default")
                assert response is not None, f"{method} {path} answered {status}, which its OpenAPI entry does not list"
                content = response.get("content", {})
                documented = content.get(media) or content.get("application/json")
                assert documented is not None, f"{method} {path} {status}: {media} is not documented"
                return {**documented.get("schema", {}), "components": self._components}
        return None

    async def __call__(self, response: httpx.Response) -> None:
        media = response.headers.get("content-type", "").split(";")[0].strip()
        if media not in JSON_MEDIA or not response.request.url.path.startswith(("/v1/", "/healthz")):
            return
        schema = self.schema_for(response.request.method, response.request.url.path, response.status_code, media)
        if schema is None:
            return
        await response.aread()
        errors = sorted(Draft202012Validator(schema).iter_errors(json.loads(response.content)), key=str)
        assert not errors, (
            f"{response.request.method} {response.request.url.path} {response.status_code} does not fit its "
            f"OpenAPI schema: " + "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
        )
        self.checked += 1
