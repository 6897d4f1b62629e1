"""Large step outputs by reference: stored once, so history holds a small `OutputRef`.

A step's output above `OUTPUT_REF_BYTES` is written to Postgres by a local activity (whose
input never enters history) and the outcome carries the reference from then on: into the
respond call, the run record, the result and a continue-as-new. The scheduler keeps the
value itself in workflow memory, so later steps still resolve references into it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio import workflow

from agentkeel.schemas import names
from agentkeel.schemas.outputs import (
    OUTPUT_REF_BYTES,
    LoadedOutputs,
    LoadOutputsInput,
    StoreOutputInput,
)
from agentkeel.schemas.result import OutputRef, StepOutcome
from agentkeel.workflows import timeouts
from agentkeel.workflows.release import since

OUTPUTS_BY_REFERENCE_PATCH = "outputs-by-reference-v1"
"""Runs recorded before large outputs travelled by reference replay with them inline."""


async def carry_by_reference(outcomes: Sequence[StepOutcome], tenant: str) -> None:
    """Replace each output too large for history with its reference, in place."""
    for outcome in outcomes:
        if outcome.output_ref is not None:  # stored already (a resumed step, resolved)
            outcome.output = None
            continue
        if outcome.output is None:
            continue
        size = len(json.dumps(outcome.output, separators=(",", ":")))
        if size <= OUTPUT_REF_BYTES or not since(OUTPUTS_BY_REFERENCE_PATCH):
            continue
        info = workflow.info()
        ref: OutputRef = await workflow.execute_local_activity(
            names.STORE_OUTPUT,
            StoreOutputInput(
                # Names the chain (stable across retries and continue-as-new), the round and
                # the step: storing it again is a no-op.
                # (and the reading: a watch's output changes from one run to the next).
                ref=f"{info.workflow_id}/{info.first_execution_run_id}/{outcome.attempt}/"
                f"{outcome.id}#{outcome.runs}",
                tenant=tenant,
                workflow_id=info.workflow_id,
                step_id=outcome.id,
                output=outcome.output,
            ),
            result_type=OutputRef,
            start_to_close_timeout=timeouts.STORE_TIMEOUT,
            retry_policy=timeouts.STORE_RETRY,
            summary=f"store output of {outcome.id}",
        )
        outcome.output_ref, outcome.output = ref, None


async def load_referenced(outcomes: Sequence[StepOutcome]) -> Mapping[str, Any]:
    """The outputs behind the references among `outcomes`, by reference."""
    refs = [o.output_ref.ref for o in outcomes if o.output_ref is not None]
    if not refs:
        return {}
    loaded: LoadedOutputs = await workflow.execute_local_activity(
        names.LOAD_OUTPUTS,
        LoadOutputsInput(refs=refs),
        result_type=LoadedOutputs,
        start_to_close_timeout=timeouts.STORE_TIMEOUT,
        retry_policy=timeouts.STORE_RETRY,
        summary="load outputs",
    )
    return loaded.outputs
