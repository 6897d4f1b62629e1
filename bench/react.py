"""`BenchReactWorkflow`: a ReAct-style loop over the same plan, for the DAG benchmark.

One model turn per tool step: for each step in topological order the loop calls the
`plan` activity on the inference queue ("think": pick the next action, seeing every
observation so far), then runs that one tool as an activity ("act"), records its
output ("observe") and goes on; finally it calls `respond` once, as `AgentWorkflow`
does. The think turn's answer is not used to pick the step: the bench's planner is a
fake that returns the whole plan, so the loop takes the next step of the plan it was
given. What a turn costs (an activity round trip plus the model's time) is real.

Registered only on the benchmark's CPU worker. Imports stay within the stdlib,
temporalio, pydantic and the project's sandbox-safe modules: `schemas` and
`schemas.plan.validation` are sandbox pass-throughs (`schemas.plugin`); `workflows.dag.scheduler`
(for `resolve`) and `workflows.timeouts` are deterministic and re-imported per run,
as they are for `AgentWorkflow`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from agentkeel.schemas import names
from agentkeel.schemas.model_calls import PlanInput, PlanResult, RespondInput, RespondResult
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.validation import PlanValidationError, topological_order, validate_plan
from agentkeel.schemas.queues import inference_queue
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows import timeouts
from agentkeel.workflows.dag.resolve import resolve

WORKFLOW_NAME = "BenchReactWorkflow"
_ROUTE = Route(intent="bench", confidence=0.1, tier=Tier.RULES, reason="react bench loop")


class ReactInput(BaseModel):
    plan: Plan
    question: str
    """Passed to every model turn; the bench's fake planner reads the shape name from it."""
    per_turn_model: bool = True
    """False: no think turns, only the one-tool-at-a-time loop (and the final respond)."""


class ReactResult(BaseModel):
    answer: str
    steps: list[StepOutcome] = Field(default_factory=list)
    think_ms: float = 0.0
    """Workflow time spent in the `plan` (think) turns, summed."""
    tools_ms: float = 0.0
    """Workflow time spent in the tool activities, summed."""
    loop_ms: float = 0.0
    """From the start of the run to the last observation: think_ms + tools_ms + bookkeeping."""
    respond_ms: float = 0.0
    total_ms: float = 0.0


def _ms(since: datetime) -> float:
    return (workflow.now() - since).total_seconds() * 1000


@workflow.defn(name=WORKFLOW_NAME)
class BenchReactWorkflow:
    @workflow.run
    async def run(self, request: ReactInput) -> ReactResult:
        started = workflow.now()
        plan = request.plan
        try:
            deps = validate_plan(plan, TOOLS)
        except PlanValidationError as exc:
            raise ApplicationError(exc.message, type=exc.kind, non_retryable=True) from exc
        by_id = {s.id: s for s in plan.steps}
        model_queue = inference_queue(workflow.info().task_queue)
        outputs: dict[str, Any] = {}
        steps: list[StepOutcome] = []
        think_ms = tools_ms = 0.0
        for turn, step_id in enumerate(topological_order(plan, deps)):
            step = by_id[step_id]
            if step.for_each is not None:
                raise ApplicationError(
                    "for_each is not supported by the react loop", non_retryable=True
                )
            if request.per_turn_model:
                think = workflow.now()
                await workflow.execute_activity(
                    names.PLAN,
                    PlanInput(
                        question=request.question,
                        route=_ROUTE,
                        attempt=turn,
                        previous_steps=steps,
                    ),
                    result_type=PlanResult,
                    task_queue=model_queue,
                    start_to_close_timeout=timeouts.PLAN_TIMEOUT,
                    retry_policy=timeouts.MODEL_RETRY,
                    summary=f"think {turn}",
                )
                think_ms += _ms(think)
            act = workflow.now()
            args = resolve(step.args, outputs)
            outputs[step.id] = await self._act(step.id, step.tool, args)
            tools_ms += _ms(act)
            steps.append(
                StepOutcome(
                    id=step.id,
                    tool=step.tool,
                    args=args,
                    status=StepStatus.SUCCEEDED,
                    started_at=act,
                    finished_at=workflow.now(),
                    output=outputs[step.id],
                )
            )
        loop_ms = _ms(started)
        respond = workflow.now()
        answered: RespondResult = await workflow.execute_activity(
            names.RESPOND,
            RespondInput(
                question=request.question,
                route=_ROUTE,
                steps=steps,
                run_id=workflow.info().run_id,
            ),
            result_type=RespondResult,
            task_queue=model_queue,
            start_to_close_timeout=timeouts.RESPOND_TIMEOUT,
            retry_policy=timeouts.MODEL_RETRY,
            summary="respond",
        )
        return ReactResult(
            answer=answered.answer,
            steps=steps,
            think_ms=think_ms,
            tools_ms=tools_ms,
            loop_ms=loop_ms,
            respond_ms=_ms(respond),
            total_ms=_ms(started),
        )

    async def _act(self, step_id: str, tool: str, args: dict[str, Any]) -> Any:
        """One tool activity, configured as `workflows.dag.dispatch` dispatches it."""
        spec = TOOLS[tool]
        payload = dict(args)
        if not spec.idempotent:
            payload["idempotency_key"] = f"{workflow.info().workflow_id}/{step_id}"
        result = await workflow.execute_activity(
            spec.name,
            payload,
            result_type=spec.result_model,
            task_queue=workflow.info().task_queue,
            start_to_close_timeout=spec.timeout,
            retry_policy=RetryPolicy(
                maximum_attempts=spec.max_attempts,
                non_retryable_error_types=list(spec.non_retryable_errors),
            ),
            summary=f"{step_id}: {tool}",
        )
        return result.model_dump(mode="json")
