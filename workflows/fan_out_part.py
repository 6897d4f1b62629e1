"""`AgentFanOut`: one part of a large `for_each` step, in a history of its own.

Started by `workflows.dag.fan_out.run_fan_out`; a module of its own so that the workflow
definition stays in the sandbox while the orchestration modules are passed through.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from agentkeel.schemas import errors, names
from agentkeel.schemas.outputs import FanOutInput, FanOutResult, StoreOutputInput
from agentkeel.schemas.result import OutputRef, StepError
from agentkeel.schemas.tools import TOOLS, ToolSpec
from agentkeel.workflows import timeouts
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.tool_activity import (
    describe_error,
    execute_tool,
    summary_of,
    with_tenant,
)
from agentkeel.workflows.inputs import one_input


def _refuse_unless_child_of_its_run(part: FanOutInput, spec: ToolSpec | None) -> None:
    """A part runs only as the child of the run that cut it (its `ref` names that run),
    for an idempotent tool: started any other way it fails at once, running nothing."""
    parent = workflow.info().parent
    problem = None
    if parent is None:
        problem = "it was not started by an agent run (a fan-out part is only ever a child)"
    elif not part.ref.startswith(f"{parent.workflow_id}/"):
        problem = f"its outputs' ref {part.ref!r} does not belong to its parent run"
    elif spec is None:
        problem = f"{part.tool!r} is not a tool of this domain"
    elif not spec.idempotent or spec.runs_in_workflow:
        problem = f"{part.tool} is not a read: side effects never run in fan-out parts"
    if problem is not None:
        raise ApplicationError(
            f"{names.FAN_OUT_WORKFLOW} refused: {problem}",
            type=errors.CALLER_NOT_ALLOWED,
            non_retryable=True,
        )


@workflow.defn(name=names.FAN_OUT_WORKFLOW)
class FanOutWorkflow:
    """Runs one part of a large `for_each` step; stores its outputs, returns the ref."""

    @workflow.run
    async def run(self, *inputs: Any) -> FanOutResult:
        """One input: `FanOutInput` JSON. Decoded here, not in the signature, so that a part
        started directly with any other shape fails at once (`workflows.inputs`)."""
        part = one_input(inputs, FanOutInput, names.FAN_OUT_WORKFLOW)
        spec = TOOLS.get(part.tool)
        _refuse_unless_child_of_its_run(part, spec)
        assert spec is not None
        slots = asyncio.Semaphore(part.max_concurrency)

        failed: list[StepError] = []

        async def one(index: int, args: dict[str, Any]) -> Any:
            call = ToolCall(part.step_id, part.tool, args, index=part.first_index + index)
            async with slots:
                payload = with_tenant({**args, "actor": part.actor}, part.tenant)
                try:
                    return await execute_tool(spec, payload, part.task_queue, summary_of(call))
                except ActivityError as exc:
                    error = describe_error(exc)
                    error.message = f"{call.call_id}: {error.message}"
                    failed.append(error)
                    raise

        tasks = [asyncio.ensure_future(one(i, a)) for i, a in enumerate(part.calls)]
        try:
            outputs = await asyncio.gather(*tasks)
        except ActivityError:
            # The first element that failed fails the part; the others need not run.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            return FanOutResult(error=failed[0])
        ref: OutputRef = await workflow.execute_local_activity(
            names.STORE_OUTPUT,
            StoreOutputInput(
                ref=part.ref,
                tenant=part.tenant,
                workflow_id=workflow.info().workflow_id,
                step_id=part.step_id,
                output=list(outputs),
            ),
            result_type=OutputRef,
            start_to_close_timeout=timeouts.STORE_TIMEOUT,
            retry_policy=timeouts.STORE_RETRY,
            summary=f"store outputs {part.first_index}..{part.first_index + len(outputs) - 1}",
        )
        return FanOutResult(ref=ref)
