"""`CacheWarmerWorkflow`: re-runs the day's hot questions before their cache entries expire.

A Temporal Schedule starts it (`agentkeel-cache-warmer`), so ops see every warming
run in the Web UI and can pause or trigger the schedule there.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import Priority
from temporalio.exceptions import ChildWorkflowError

from agentkeel.schemas.names import CACHE_WARMER_WORKFLOW, HOT_QUESTIONS
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.warming import (
    HotQuestion,
    HotQuestionsInput,
    HotQuestionsResult,
    WarmInput,
    WarmResult,
)
from agentkeel.workflows import timeouts
from agentkeel.workflows.agent import AgentWorkflow

WARMER_NAME = CACHE_WARMER_WORKFLOW
HOT_QUESTIONS_TIMEOUT = timedelta(seconds=30)
WARM_RUN_TIMEOUT = timedelta(minutes=5)
TENANT_FAIRNESS_PATCH = "warm-tenant-fairness-v1"
"""The warmer's runs carry their question's tenant as fairness key (`schemas.lanes`)."""


def _run_priority(tenant: str) -> Priority:
    """A warming run's priority: the warmer's lane (inherited from the warmer's own run)
    with its question's tenant as fairness key, so one tenant's hot questions do not hold
    back another's. A warmer started without a fairness key (lanes off) gives none."""
    if workflow.info().priority.fairness_key is None:
        return Priority.default
    if not workflow.patched(TENANT_FAIRNESS_PATCH):
        return Priority.default
    # The warmer's own priority key, said outright rather than left to the server's merge
    # of a child's priority with its parent's.
    return Priority(priority_key=workflow.info().priority.priority_key, fairness_key=tenant)


@workflow.defn(name=WARMER_NAME)
class CacheWarmerWorkflow:
    @workflow.run
    async def run(self, request: WarmInput) -> WarmResult:
        hot: HotQuestionsResult = await workflow.execute_activity(
            HOT_QUESTIONS,
            HotQuestionsInput(
                top_n=request.top_n,
                since_hours=request.since_hours,
                renew_below_s=request.renew_below_s,
            ),
            result_type=HotQuestionsResult,
            start_to_close_timeout=HOT_QUESTIONS_TIMEOUT,
            retry_policy=timeouts.STORE_RETRY,
        )
        result = WarmResult(considered=hot.considered)
        slots = asyncio.Semaphore(request.max_parallel)  # the warmer must not crowd out users

        async def warm(index: int, question: HotQuestion) -> None:
            async with slots:
                try:
                    await workflow.execute_child_workflow(
                        AgentWorkflow.run,
                        AgentRequest(
                            question=question.question,
                            tenant=question.tenant,
                            options=RunOptions(refresh_cache=True, read_only=True),
                        ),
                        id=f"{workflow.info().workflow_id}-{index}",
                        execution_timeout=WARM_RUN_TIMEOUT,
                        priority=_run_priority(question.tenant),
                    )
                except ChildWorkflowError as exc:
                    workflow.logger.warning("warming %r failed: %s", question.question, exc.cause)
                    result.failed.append(question)
                else:
                    result.warmed.append(question)

        await asyncio.gather(*(warm(i, q) for i, q in enumerate(hot.due)))
        return result
