"""Pages beside the API: the favicon and `/docs`, the API's interactive documentation, served from local files.

Nothing is fetched from a CDN, so `/docs` works offline and behind strict networks: Swagger UI's
files come from the pinned `swagger-ui-bundle-v2` package, the favicon from the web UI's folder.
The page has no inline script (its start-up is `static/docs.js`), so a strict Content Security
Policy (`script-src 'self'`) serves it as it is.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]  # the package ships no types

DOCS_ASSETS = "/docs-assets"

_DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{title}</title>
  <link rel="icon" href="/favicon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="{assets}/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui" data-openapi-url="{openapi}"></div>
  <script src="{assets}/swagger-ui-bundle.js"></script>
  <script src="/static/docs.js"></script>
</body>
</html>
"""


def install_pages(app: FastAPI, static: Path) -> None:
    """Serve `/favicon.ico` (and `.svg`) and `/docs` with Swagger UI's own files under `/docs-assets`."""
    icon = static / "favicon.svg"

    @app.get("/favicon.ico", include_in_schema=False)
    @app.get("/favicon.svg", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(icon, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})

    page = _DOCS_PAGE.format(
        title=escape(f"{app.title} API"), assets=DOCS_ASSETS, openapi=escape(app.openapi_url or "/openapi.json")
    )

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(page)

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")
