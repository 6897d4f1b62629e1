"""The ways `bench.dag` runs one plan shape, each timed: the physical limit (plain asyncio
tasks), the DAG scheduler in-process, `AgentWorkflow` on the bench stack, and the ReAct
loop (`bench.react`) on the same stack; each run checks that every step succeeded.

Kept apart from the benchmark's rounds and tables (`bench.dag`) because `bench.levers`
times its runs the same way (`e2e_of_run`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import StepOutcome, StepStatus
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.agent import AgentWorkflow
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.dispatch import describe_error
from agentkeel.workflows.dag.scheduler import DagScheduler
from agentkeel.workflows.dag.step_gates import SchedulerLimits
from bench.dag_shapes import Shape, question_for
from bench.fakes import stand_in_result
from bench.react import BenchReactWorkflow, ReactInput
from bench.stack import BenchStack

WIDE_CONCURRENCY = 8
"""The run cap of the workflow mode: as wide as the widest shape."""
RUN_TIMEOUT = timedelta(seconds=60)
"""Execution timeout of every run: a broken workflow fails the benchmark instead of hanging."""


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


async def run_direct(shape: Shape, latency_s: float) -> float:
    """The physical limit: no scheduler, each step a task awaiting its dependencies."""
    tasks: dict[str, asyncio.Task[None]] = {}

    async def step(deps: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*deps)
        await asyncio.sleep(latency_s)

    start = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for s in shape.plan.steps:  # plan order is topological
            tasks[s.id] = group.create_task(step([tasks[d] for d in shape.deps[s.id]]))
    return _ms_since(start)


async def run_scheduler(shape: Shape, latency_s: float) -> float:
    """The production scheduler with an in-process dispatch: scheduler cost without Temporal."""

    async def dispatch(call: ToolCall) -> Any:
        await asyncio.sleep(latency_s)
        return stand_in_result(call.tool, call.args).model_dump(mode="json")

    scheduler = DagScheduler(
        shape.plan,
        TOOLS,
        dispatch=dispatch,
        now=lambda: datetime.now(UTC),
        describe_error=describe_error,
        limits=SchedulerLimits(max_concurrency=WIDE_CONCURRENCY),
    )
    start = time.perf_counter()
    outcomes = await scheduler.run()
    elapsed = _ms_since(start)
    _check_succeeded(shape, outcomes)
    return elapsed


async def run_workflow(
    stack: BenchStack, shape: Shape, n: int, max_concurrency: int
) -> tuple[float, float, float, int]:
    """Tools layer and route + plan + tools ms in workflow time, client end-to-end ms,
    peak steps in flight."""
    request = AgentRequest(
        question=question_for(shape, n),
        tenant="bench",
        options=RunOptions(use_cache=False, max_concurrency=max_concurrency),
    )
    start = time.perf_counter()
    handle = await stack.client.start_workflow(
        AgentWorkflow.run,
        request,
        id=f"bench-{shape.name}-{uuid.uuid4().hex[:12]}",
        task_queue=stack.task_queue,
        execution_timeout=RUN_TIMEOUT,
    )
    result = await handle.result()
    e2e = _ms_since(start)
    _check_succeeded(shape, result.steps)
    t = result.timings_ms
    LAYERS[(shape.name, max_concurrency)].append(
        {"route": t.route, "plan": t.plan, "respond": t.respond, "outside": e2e - t.total}
    )
    return t.tools, t.route + t.plan + t.tools, e2e, _peak_overlap(result.steps)


LAYERS: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
"""Per shape and cap, each measured run's route, plan and respond layers and the time
outside the run (client start and result, first and last workflow task): where the fixed
part of the workflow's end-to-end time goes."""


async def run_react(stack: BenchStack, shape: Shape, n: int) -> tuple[float, float, float, int]:
    """(loop ms and think ms in workflow time, client end-to-end ms, peak steps in flight)."""
    start = time.perf_counter()
    handle = await stack.client.start_workflow(
        BenchReactWorkflow.run,
        ReactInput(plan=shape.plan, question=question_for(shape, n)),
        id=f"bench-react-{shape.name}-{uuid.uuid4().hex[:12]}",
        task_queue=stack.task_queue,
        execution_timeout=RUN_TIMEOUT,
    )
    result = await handle.result()
    e2e = _ms_since(start)
    _check_succeeded(shape, result.steps)
    return result.loop_ms, result.think_ms, e2e, _peak_overlap(result.steps)


def _check_succeeded(shape: Shape, outcomes: list[StepOutcome]) -> None:
    bad = [o for o in outcomes if o.status is not StepStatus.SUCCEEDED]
    if len(outcomes) != shape.steps or bad:
        raise RuntimeError(f"{shape.name}: not every step succeeded: {bad or outcomes}")


def _peak_overlap(outcomes: list[StepOutcome]) -> int:
    """Most steps whose recorded [start, finish) intervals overlap (ends sort before starts)."""
    events = []
    for o in outcomes:
        assert o.started_at is not None and o.finished_at is not None
        events += [(o.started_at, 1), (o.finished_at, -1)]
    current = peak = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        current += delta
        peak = max(peak, current)
    return peak


async def e2e_of_run(stack: BenchStack, shape: Shape, n: int) -> float:
    """One workflow-mode run of `shape`: its client end-to-end ms."""
    return (await run_workflow(stack, shape, n, WIDE_CONCURRENCY))[2]
