"""The benchmark's workflow: one respond activity on the inference queue, nothing else.

So `bench.inference` measures the inference worker (Temporal dispatch, the activity,
the policy, the engine, the token stream) without the tools or the cache around it.
"""

from __future__ import annotations

from temporalio import workflow

from agentkeel.schemas import names
from agentkeel.schemas.model_calls import RespondInput, RespondResult
from agentkeel.workflows import timeouts


@workflow.defn(name="BenchRespondWorkflow")
class BenchRespondWorkflow:
    @workflow.run
    async def run(self, request: RespondInput, inference_queue: str) -> RespondResult:
        result: RespondResult = await workflow.execute_activity(
            names.RESPOND,
            request,
            result_type=RespondResult,
            task_queue=inference_queue,
            start_to_close_timeout=timeouts.RESPOND_TIMEOUT,
            heartbeat_timeout=timeouts.MODEL_HEARTBEAT,
            retry_policy=timeouts.MODEL_RETRY,
        )
        return result
