"""The gateway's OpenAPI document, as client generators need it, and Swagger UI served from
the files of the installed `fastapi-swagger` package (no CDN: `/docs` works offline).

FastAPI's document is amended in one place: operation ids are the routes' names in camel
case (`startRun`, not `start_run_v1_runs_post`), every error answer is
`application/problem+json` with its problem schema (`gateway.problems`; 422 included, in
place of FastAPI's own `HTTPValidationError`), and the API keys are a bearer
`securityScheme` that every operation lists (optional: a keyless gateway on loopback takes
none).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, Response
from fastapi.routing import APIRoute
from pydantic.json_schema import models_json_schema

from agentkeel.schemas.gateway import PROBLEM_MEDIA_TYPE, Problem, QuotaProblem, ValidationProblem

__all__ = ["SECURITY_SCHEME", "operation_id", "serve_openapi"]

SECURITY_SCHEME = "apiKey"
"""The name of the API keys' scheme in `components.securitySchemes`."""
_ERROR_MODELS = {"422": ValidationProblem, "429": QuotaProblem}


def operation_id(route: APIRoute) -> str:
    """`start_run` -> `startRun`: the route's function name, as generators name methods."""
    first, *rest = route.name.split("_")
    return first + "".join(part.capitalize() for part in rest)


def serve_openapi(app: FastAPI) -> None:
    """`GET /openapi.json` as amended here, and Swagger UI at `/docs` from the package."""

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _amended(app)
        return app.openapi_schema

    app.openapi = document  # type: ignore[method-assign]

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - Swagger UI",
            swagger_js_url="/docs/swagger-ui-bundle.js",
            swagger_css_url="/docs/swagger-ui.css",
            swagger_favicon_url="/docs/favicon-32x32.png",
        )

    @app.get("/docs/{asset}", include_in_schema=False)
    async def swagger_asset(asset: str) -> Response:
        if asset not in _ASSETS:
            raise HTTPException(404, f"no asset {asset!r}")
        cache = {"Cache-Control": "public, max-age=86400"}
        return Response(_asset(asset), media_type=_ASSETS[asset], headers=cache)


_ASSETS = {
    "swagger-ui-bundle.js": "application/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
"""Swagger UI's files as the `fastapi-swagger` package ships them (Swagger UI 5, which
reads OpenAPI 3.1)."""


@functools.cache
def _asset(name: str) -> bytes:
    return resources.files("fastapi_swagger.resources").joinpath(name).read_bytes()


def _amended(app: FastAPI) -> dict[str, Any]:
    doc = get_openapi(
        title=app.title, version=app.version, summary=app.summary,
        description=app.description, routes=app.routes, tags=app.openapi_tags,
    )  # fmt: skip
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    _, defs = models_json_schema(
        [(m, "serialization") for m in (Problem, ValidationProblem, QuotaProblem)],
        ref_template="#/components/schemas/{model}",
    )
    schemas.update(defs.get("$defs", {}))
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    doc["components"]["securitySchemes"] = {
        SECURITY_SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key of the gateway's keys file (`AGENTKEEL_API_KEYS_FILE`); "
            "a gateway without keys serves loopback only and takes none.",
        }
    }
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            operation["security"] = [{SECURITY_SCHEME: []}, {}]
            for status, answer in operation.get("responses", {}).items():
                if status[0] in "45":
                    model = _ERROR_MODELS.get(status, Problem)
                    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
                    answer["content"] = {PROBLEM_MEDIA_TYPE: {"schema": ref}}
                    answer.setdefault("description", "problem details (RFC 9457)")
    return doc
