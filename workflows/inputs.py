"""Inputs that workflows and their handlers decode themselves: any shape, a named error.

Runs, updates and signals that outside callers reach take `*inputs: Any` rather than a
model in the signature. Given a model, the SDK validates before any workflow code runs, and
a value of the wrong shape, or one argument too many or too few, then raises an ordinary
exception: for a run or a signal that fails the workflow task, which is retried forever, so
the run stays Running. Decoded here, it is an `ApplicationError` the run, the update or
the signal handler decides about. (Bytes that are not JSON at all never get this far: the
payload converter refuses them, `schemas.payload_converter`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.errors import INVALID_REQUEST, describe_validation

MAX_ERROR_CHARS = 2000
"""An error message names every bad field, but never grows with a hostile input's size."""

Model = TypeVar("Model", bound=BaseModel)


def invalid(message: str) -> ApplicationError:
    """A non-retryable `InvalidRequest` carrying `message` (cut to `MAX_ERROR_CHARS`)."""
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 1] + "…"
    return ApplicationError(message, type=INVALID_REQUEST, non_retryable=True)


def one_input(inputs: Sequence[Any], model: type[Model], what: str) -> Model:
    """The one JSON input of `what` (a workflow, an update, a signal) as `model`; anything
    else raises `InvalidRequest` naming the count or every bad field."""
    if len(inputs) != 1:
        raise invalid(f"{what} takes one input, got {len(inputs)}")
    try:
        return model.model_validate(inputs[0])
    except ValidationError as exc:
        raise invalid(f"invalid {what} input: {describe_validation(exc)}") from None
