"""The payload converter: pydantic JSON, and a payload that cannot be read fails at once.

The SDK decodes a workflow's input, its updates' and signals' arguments and its activities'
results before any workflow code runs. When that decoding raises an ordinary exception,
the SDK fails the workflow *task*, which the server retries, on every worker, forever: the
run stays Running. For a payload whose bytes cannot be read at all (an unknown `encoding`,
bytes that are not JSON, JSON nested deeper than pydantic's limit of 200 levels) no retry
and no deploy can help, since history holds the same bytes each time. So those failures
are raised as a non-retryable `ApplicationError` of type `UndecodablePayload`, which the
SDK lets through as a failure of the run (or the update) rather than of the task.

A payload that reads as JSON but does not fit a type hint keeps the SDK's behaviour (a
task retry): that is a mismatch a fixed worker can resolve, and the workflows that take
outside input decode it themselves (`workflows.inputs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.errors import UNDECODABLE_PAYLOAD

MAX_PROBLEM_CHARS = 300
"""A hostile encoding name or protobuf type never makes the error message large."""

_UNKNOWN_ENCODING = "Unknown payload encoding"


class ReadablePayloadConverter(PydanticPayloadConverter):
    """`PydanticPayloadConverter` that names an unreadable payload as `UndecodablePayload`."""

    def from_payloads(
        self, payloads: Sequence[Payload], type_hints: list[type] | None = None
    ) -> list[Any]:
        """See base class; an unreadable payload raises a non-retryable `ApplicationError`."""
        try:
            return super().from_payloads(payloads, type_hints)
        except (KeyError, RuntimeError, ValidationError) as exc:
            problem = unreadable(exc)
            if problem is None:
                raise
            if len(problem) > MAX_PROBLEM_CHARS:
                problem = problem[: MAX_PROBLEM_CHARS - 1] + "…"
            raise ApplicationError(
                f"undecodable payload: {problem}", type=UNDECODABLE_PAYLOAD, non_retryable=True
            ) from None


def unreadable(exc: Exception) -> str | None:
    """What makes the payload unreadable, or None when `exc` is about something else (a
    JSON value that does not fit its type hint)."""
    if isinstance(exc, KeyError):
        message = str(exc.args[0]) if exc.args else ""
        if message.startswith(_UNKNOWN_ENCODING):
            name = message.removeprefix(_UNKNOWN_ENCODING).strip()
            return f"unknown encoding {name!r}"
        return None
    if isinstance(exc, ValidationError):
        problems = exc.errors()
        if problems and all(p["type"] == "json_invalid" for p in problems):
            return str(problems[0]["msg"])  # e.g. "Invalid JSON: recursion limit exceeded ..."
        return None
    # The composite converter wraps what an encoding's converter raised (a protobuf type
    # that does not exist, bytes that do not parse as one) in a RuntimeError of its own.
    cause = exc.__cause__
    return f"{exc}: {cause}" if cause is not None else str(exc)


readable_data_converter = DataConverter(payload_converter_class=ReadablePayloadConverter)
"""The pydantic data converter, with unreadable payloads failing at once (module docstring)."""
