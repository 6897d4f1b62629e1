"""The run's own inputs: the request JSON, and what a run it continues handed on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from temporalio import workflow

from agentkeel.schemas.continuation import Continuation
from agentkeel.schemas.errors import describe_validation
from agentkeel.schemas.request import AgentRequest, LegacyAgentRequest
from agentkeel.workflows.inputs import invalid


def parse_continuation(inputs: Sequence[Any]) -> Continuation | None:
    """What the run this one continues handed on; None for a run a client started.

    A second input is accepted only from `AgentWorkflow` itself, naming the very run that
    this one continues: a client can neither start a run so nor guess that run's id (a cron
    run also has a `continued_run_id`, but repeats the client's inputs: refused).
    """
    if len(inputs) != 2:
        return None
    info = workflow.info()
    try:
        carried = Continuation.model_validate(inputs[1])
    except ValidationError as exc:
        raise invalid(f"invalid AgentWorkflow continuation: {exc.errors()[0]['msg']}") from None
    if info.cron_schedule or carried.from_run_id != info.continued_run_id:
        raise invalid("AgentWorkflow takes one input (the request JSON), got 2")
    return carried


def parse_request(inputs: Sequence[Any], *, strict: bool = True) -> AgentRequest:
    """Validate the JSON input; a bad one fails the run at once, naming every bad field.

    The inputs are decoded as plain JSON and validated here, rather than typed as
    `AgentRequest` in the signature: a decode failure there would leave the workflow task
    retrying forever, and widening `failure_exception_types` to pydantic errors would also
    fail runs in flight permanently on any later validation bug. For the same reason the
    run takes any number of inputs and refuses all but exactly one. Bytes that are not JSON
    at all never get here: the payload converter fails the run with `UndecodablePayload`
    (`schemas.payload_converter`).
    """
    continued = len(inputs) == 2 and workflow.info().continued_run_id is not None
    if len(inputs) != 1 and not continued:  # (a second input is checked by parse_continuation)
        raise invalid(f"AgentWorkflow takes one input (the request JSON), got {len(inputs)}")
    try:
        if not strict:
            return LegacyAgentRequest.model_validate(inputs[0]).upgraded()
        return AgentRequest.model_validate(inputs[0])
    except ValidationError as exc:
        raise invalid(f"invalid AgentWorkflow input: {describe_validation(exc)}") from None
