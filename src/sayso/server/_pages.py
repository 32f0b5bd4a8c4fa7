"""Pages beside the API: the favicon and `/docs`, the API's interactive documentation, served from local files.

Nothing is fetched from a CDN, so `/docs` works offline and behind strict networks: Swagger UI's
files come from the pinned `swagger-ui-bundle-v2` package, the favicon from the web UI's folder.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]  # the package ships no types

DOCS_ASSETS = "/docs-assets"


def install_pages(app: FastAPI, static: Path) -> None:
    """Serve `/favicon.ico` (and `.svg`) and `/docs` with Swagger UI's own files under `/docs-assets`."""
    icon = static / "favicon.svg"

    @app.get("/favicon.ico", include_in_schema=False)
    @app.get("/favicon.svg", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(icon, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url="/favicon.svg",
            swagger_ui_parameters={"displayOperationId": True},
        )

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")
