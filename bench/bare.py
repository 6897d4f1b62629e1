"""The bare-Temporal reference for `bench.load`: the shape of an agentkeel run, nothing else.

One local activity (the cache lookup), one activity on a second queue (route), two
parallel activities (tools), one more on the second queue (respond), one local activity
(the record): sandboxed, no LangGraph, no policy, payloads of a similar size. What a run
of `AgentWorkflow` costs beyond this is agentkeel's orchestration tax.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

BARE_WORKFLOW = "BenchBareWorkflow"
_TIMEOUT = timedelta(seconds=10)
_PAYLOAD = "x" * 400


@activity.defn(name="bench_bare_step")
async def bare_step(text: str) -> str:
    return text


@workflow.defn(name=BARE_WORKFLOW)
class BenchBareWorkflow:
    @workflow.run
    async def run(self, question: str) -> str:
        second_queue = workflow.info().task_queue + "-inference"
        await workflow.execute_local_activity(bare_step, question, start_to_close_timeout=_TIMEOUT)
        await workflow.execute_activity(
            bare_step, _PAYLOAD, task_queue=second_queue, start_to_close_timeout=_TIMEOUT
        )
        await asyncio.gather(
            *(
                workflow.execute_activity(bare_step, _PAYLOAD, start_to_close_timeout=_TIMEOUT)
                for _ in range(2)
            )
        )
        answer = await workflow.execute_activity(
            bare_step, question, task_queue=second_queue, start_to_close_timeout=_TIMEOUT
        )
        await workflow.execute_local_activity(bare_step, answer, start_to_close_timeout=_TIMEOUT)
        return answer
