"""Large `for_each` steps in child workflows: the run's own history stays small.

Every tool call is an activity with its events in history; a fan-out over hundreds of
rows would fill the run's history with them. A large step of an idempotent tool whose
output no later step reads (it reaches the answer by reference) is cut into parts of at
most `PART_SIZE` calls, each run by an `AgentFanOut` child with its share of the run's
concurrency. A child stores its part's outputs in Postgres; the run combines the parts
into one `OutputRef`. Every call keeps its own activity, retries and actor, as inline.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError

from schemas import names
from schemas.outputs import CombineOutputsInput, FanOutInput, FanOutResult, StoreOutputInput
from schemas.result import OutputRef, StepError
from schemas.tools import TOOLS
from workflows import timeouts
from workflows.dag.run_context import RunContext
from workflows.dag.scheduler import ToolCall
from workflows.dag.tool_activity import StepRefused, describe_error, execute_tool, summary_of

PARTITION_AT = 100
"""A `for_each` step of this many calls or more runs in children (see module docstring)."""
PART_SIZE = 100
FAN_OUT_PATCH = "fan-out-children-v1"


def may_partition() -> bool:
    """Runs recorded before fan-out children replay with their calls inline."""
    return workflow.patched(FAN_OUT_PATCH)


async def run_fan_out(call: ToolCall, ctx: RunContext) -> dict[str, Any]:
    """Run `call.batch` in children; the combined outputs' `OutputRef` as a dict."""
    assert call.batch is not None
    info = workflow.info()
    base = f"{info.workflow_id}/{info.first_execution_run_id}/{call.round}/{call.step_id}"
    parts = [call.batch[i : i + PART_SIZE] for i in range(0, len(call.batch), PART_SIZE)]
    # The parts share the run's cap (each at least one call at a time).
    share = max(1, ctx.request.options.max_concurrency // len(parts))
    inputs = [
        FanOutInput(
            step_id=call.step_id,
            tool=call.tool,
            calls=list(part),
            first_index=n * PART_SIZE,
            actor=ctx.request.actor.model_dump(mode="json"),
            task_queue=ctx.tool_queue,
            max_concurrency=share,
            ref=f"{base}/part{n}",
            tenant=ctx.request.tenant,
        )
        for n, part in enumerate(parts)
    ]
    results = await asyncio.gather(
        *(
            workflow.execute_child_workflow(
                names.FAN_OUT_WORKFLOW,
                part,
                # Unique per run, round and step (the Web UI links it to its parent run).
                id=child_workflow_id(info.run_id, call.step_id, n, call.round),
                result_type=FanOutResult,
                static_summary=f"{call.step_id}: {len(part.calls)} x {call.tool}",
            )
            for n, part in enumerate(inputs)
        ),
        return_exceptions=True,
    )
    for result in results:
        if isinstance(result, ChildWorkflowError):  # the part itself failed: the step fails
            raise StepRefused(describe_error(result))
        if isinstance(result, BaseException):  # a cancellation (or a bug): the run's
            raise result
        if result.error is not None:
            raise StepRefused(result.error)
    combined: OutputRef = await workflow.execute_local_activity(
        names.COMBINE_OUTPUTS,
        CombineOutputsInput(
            ref=base,
            tenant=ctx.request.tenant,
            workflow_id=info.workflow_id,
            step_id=call.step_id,
            parts=[p.ref for p in inputs],
        ),
        result_type=OutputRef,
        start_to_close_timeout=timeouts.STORE_TIMEOUT,
        retry_policy=timeouts.STORE_RETRY,
        summary=f"combine outputs of {call.step_id}",
    )
    return combined.model_dump(mode="json")


def child_workflow_id(run_id: str, step_id: str, part: int, round_: int = 0) -> str:
    return f"fan-out-{run_id}-{round_}-{step_id}-part{part}"


@workflow.defn(name=names.FAN_OUT_WORKFLOW)
class FanOutWorkflow:
    """Runs one part of a large `for_each` step; stores its outputs, returns the ref."""

    @workflow.run
    async def run(self, part: FanOutInput) -> FanOutResult:
        spec = TOOLS[part.tool]
        slots = asyncio.Semaphore(part.max_concurrency)

        failed: list[StepError] = []

        async def one(index: int, args: dict[str, Any]) -> Any:
            call = ToolCall(part.step_id, part.tool, args, index=part.first_index + index)
            async with slots:
                payload = {**args, "actor": part.actor}
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
