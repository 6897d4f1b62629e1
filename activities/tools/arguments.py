"""Every tool call's arguments checked before anything of the call runs.

The workflow validates a plan's arguments against the tool's model, but an activity can be
reached by input it never validated: a run recorded before a check existed, a forged
payload, a model whose fields set no bounds. Decoding such input inside Temporal fails as
a *retryable* error, and a value that decodes but breaks the driver (a NUL byte, an
integer past int64) fails retryably in Postgres, in a merged request for every call sent
with it. Here the activity takes the raw JSON, checks it against the bounds every argument
keeps (`schemas.tools.arguments`) and then against the tool's own model, and refuses a bad
call for good (`InvalidArguments`) before any cache, share, batch or tool sees it.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.errors import INVALID_ARGUMENTS
from agentkeel.schemas.tools.arguments import argument_problem
from agentkeel.schemas.tools.spec import ToolSpec

__all__ = ["checked_arguments", "checked_tool", "invalid_arguments"]

R = TypeVar("R")


def invalid_arguments(spec: ToolSpec, problem: str) -> ApplicationError:
    """The non-retryable error of a call whose arguments no attempt could make valid."""
    return ApplicationError(f"{spec.name}: {problem}", type=INVALID_ARGUMENTS, non_retryable=True)


def checked_arguments(spec: ToolSpec, raw: Any) -> BaseModel:
    """`raw` (the activity's JSON input, or a model of it) as the tool's input model.

    Raises:
        ApplicationError: `InvalidArguments`, naming the first problem found.
    """
    model = spec.activity_input_model
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(mode="json")
    if not isinstance(raw, dict):
        raise invalid_arguments(spec, f"arguments must be an object, not {type(raw).__name__}")
    problem = argument_problem(raw)
    if problem is not None:
        raise invalid_arguments(spec, problem)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "arguments"
        raise invalid_arguments(spec, f"{where}: {first['msg']}") from None


def checked_tool(method: Callable[[Any], Awaitable[R]], spec: ToolSpec) -> Any:
    """The tool activity `method`, taking its input as raw JSON and refusing it unless it
    keeps every bound; same activity name and result type."""

    @functools.wraps(method, updated=())  # not __dict__: it holds the activity definition
    async def run(args: Any) -> R:
        try:
            checked = checked_arguments(spec, args)
        except ApplicationError as exc:
            activity.logger.warning("tool call refused: %s", exc.message)
            raise
        return await method(checked)

    # Temporal decodes the payload by this: as plain JSON, so a value the tool's model
    # rejects is refused here, non-retryably, instead of failing the decode (retryable).
    run.__annotations__ = {"args": dict[str, Any], "return": spec.result_model}
    return activity.defn(name=spec.name)(run)
