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
from temporalio.exceptions import ChildWorkflowError

from agentkeel.schemas import names
from agentkeel.schemas.outputs import CombineOutputsInput, FanOutInput, FanOutResult
from agentkeel.schemas.result import OutputRef
from agentkeel.workflows import timeouts
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.dag.tool_activity import StepRefused, describe_error
from agentkeel.workflows.release import since

PARTITION_AT = 100
"""A `for_each` step of this many calls or more runs in children (see module docstring)."""
PART_SIZE = 100
FAN_OUT_PATCH = "fan-out-children-v1"


def may_partition() -> bool:
    """Runs recorded before fan-out children replay with their calls inline."""
    return since(FAN_OUT_PATCH)


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
