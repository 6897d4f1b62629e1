"""Every error of the gateway as RFC 9457 problem details (`application/problem+json`).

One place answers them all, whichever part refused: a route's `Refused`, a full quota,
Temporal out of reach, a request FastAPI could not validate, a path or method no route
serves (404, 405), and the middlewares' refusals before any route (browsers, bodies). Each
kind of error has a stable `type`, a URI relative to the gateway (`/problems/<name>`, which
the gateway also serves, describing it); `title` is that type's, `detail` this occurrence's.
Clients branch on `type` (and `status`), never on the wording of `detail`.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from temporalio.service import RPCError

from agentkeel.client.budgets import BudgetExhaustedError
from agentkeel.gateway.keys import Refused
from agentkeel.gateway.quotas import OverQuota, QuotasUnavailable
from agentkeel.schemas.gateway import (
    PROBLEM_MEDIA_TYPE,
    PROBLEM_TYPES,
    BudgetProblem,
    Problem,
    QuotaScope,
    problem_type,
)

__all__ = ["answer_problems", "problem_body", "problem_response", "problem_type"]

BY_STATUS = {
    400: "bad-request", 401: "unauthenticated", 403: "forbidden", 404: "not-found",
    405: "method-not-allowed", 409: "conflict", 413: "body-too-large",
    415: "unsupported-media-type", 421: "misdirected-request", 422: "invalid-request",
    429: "quota-full", 500: "internal-error", 503: "unavailable",
}  # fmt: skip
"""The type of an error that names none, by its status."""


def problem_body(
    status: int, detail: str, kind: str | None = None, **extensions: Any
) -> dict[str, Any]:
    """The problem details of an error: `kind` names its type (by default its status's)."""
    name = kind or BY_STATUS.get(status, "internal-error" if status >= 500 else "bad-request")
    title, _ = PROBLEM_TYPES[name]
    problem = Problem(type=problem_type(name), title=title, status=status, detail=detail)
    return {**problem.model_dump(mode="json", exclude_none=True), **extensions}


def problem_response(
    status: int,
    detail: str,
    kind: str | None = None,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> JSONResponse:
    return JSONResponse(
        problem_body(status, detail, kind, **extensions),
        status_code=status,
        headers=headers,
        media_type=PROBLEM_MEDIA_TYPE,
    )


def refused_response(refused: Refused) -> JSONResponse:
    """A refused caller's problem (a missing or unknown key asks for a bearer token)."""
    headers = {"WWW-Authenticate": "Bearer"} if refused.status == 401 else None
    return problem_response(refused.status, refused.detail, refused.kind, headers)


def problem_bytes(status: int, detail: str, kind: str | None = None) -> tuple[bytes, bytes]:
    """A body and its content type, for the middlewares that answer before any route."""
    return json.dumps(problem_body(status, detail, kind)).encode(), PROBLEM_MEDIA_TYPE.encode()


def _validation_detail(errors: list[dict[str, Any]]) -> str:
    """The first error in a line (`body.question: Field required`); all are in `errors`."""
    if not errors:
        return "the request is not valid"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def answer_problems(app: FastAPI) -> None:
    """Answer every error of `app` as problem details, and serve `/problems/<name>`."""

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        return refused_response(exc)

    @app.exception_handler(OverQuota)
    async def _over_quota(_: Request, exc: OverQuota) -> JSONResponse:
        extensions = exc.problem.model_dump(mode="json", exclude={"type", "title", "status"})
        detail = extensions.pop("detail")
        retry_after = {"Retry-After": str(exc.problem.retry_after_s)}
        return problem_response(429, detail, "quota-full", retry_after, **extensions)

    @app.exception_handler(BudgetExhaustedError)
    async def _budget_spent(_: Request, exc: BudgetExhaustedError) -> JSONResponse:
        problem = BudgetProblem(
            detail=str(exc),
            scope=QuotaScope(exc.scope),
            spent=exc.spent,
            limit=exc.limit,
            window_s=exc.window_s,
            retry_after_s=exc.retry_after_s,
        )
        extensions = problem.model_dump(mode="json", exclude={"type", "title", "status", "detail"})
        retry_after = {"Retry-After": str(exc.retry_after_s)}
        return problem_response(429, str(exc), "budget-exhausted", retry_after, **extensions)

    @app.exception_handler(QuotasUnavailable)
    async def _quotas_down(_: Request, exc: QuotasUnavailable) -> JSONResponse:
        retry_after = {"Retry-After": str(exc.retry_after_s)}
        return problem_response(503, str(exc), "quotas-unavailable", retry_after)

    @app.exception_handler(RPCError)
    async def _temporal_down(_: Request, exc: RPCError) -> JSONResponse:
        return problem_response(503, f"Temporal: {exc.message}", "temporal-unavailable")

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = jsonable_encoder(exc.errors(), exclude={"input", "url", "ctx"})
        return problem_response(422, _validation_detail(errors), errors=errors)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        headers = dict(exc.headers) if exc.headers else None
        return problem_response(exc.status_code, str(exc.detail), headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # The cause is in the log (Starlette's error middleware logs it), not in the answer.
        return problem_response(500, "the gateway failed to answer; see its log")

    @app.get("/problems/{name}", include_in_schema=False)
    async def describe(name: str) -> dict[str, Any]:
        if name not in PROBLEM_TYPES:
            raise Refused(404, f"no problem type {name!r}")
        title, meaning = PROBLEM_TYPES[name]
        return {"type": problem_type(name), "title": title, "description": meaning}
