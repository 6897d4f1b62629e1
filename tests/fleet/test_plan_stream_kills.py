"""A SIGKILL of a worker of each kind while a plan streams into the DAG loses no run and
records each early read once.

A fleet of processes (two CPU workers, two inference workers) serves `bench.peer_domain`
with the real LLM policy on the token-timed model server at the slow speed (a plan takes
about two seconds to decode), whose ideal model is a fake at the model boundary. A cold
question names nothing, so its reads start only as the planner streams them
(`plan_step` signals). Once the first early read is in the run's history, the worker of
one kind that holds the plan (the inference worker writing it) or the run (the CPU worker
that took its last workflow task) is killed; the run still makes exactly its question's
calls, and each read is scheduled once in its history. A warm question (it names its
order) runs the same way with that read started at once and given to the planner. With
`AGENTKEEL_LOCAL_POLICY=on` (no inference workers), the CPU worker making the model call
as a local activity is killed during it: the other takes the run on and asks again.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from agentkeel.cli.stack.fleet import FleetWorker, WorkerFleet, WorkerKind
from agentkeel.schemas import names
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, StepStatus
from agentkeel.settings.model import Settings
from agentkeel.workflows.agent import AgentWorkflow
from bench.ideal_model import IdealShapeModel
from bench.peer_cases import TOOL_ARGS, Case, batch_name, canonical, expected_calls
from bench.token_server import SPEEDS, TokenTimedServer, serving
from tests.support.fleet_stack import fleet_env, fleet_settings, identities

UNSURE = 0.5
"""Below the router's threshold: the heavy tier plans (and streams) every run."""


@pytest.fixture
async def model_server() -> AsyncIterator[tuple[str, TokenTimedServer]]:
    async with serving(IdealShapeModel(route_confidence=UNSURE), SPEEDS["slow"]) as served:
        yield served


@asynccontextmanager
async def _fleet(
    client: Client, settings: Settings, carrier_url: str, tmp_path: Path, inference: int
) -> AsyncIterator[WorkerFleet]:
    env = fleet_env(settings, carrier_url)
    env.pop("AGENTKEEL_SHOP_CARRIER_URL")  # the bench domain has no carrier (nor the setting)
    workers = WorkerFleet(settings, env, tmp_path)
    workers.start("cpu", 2)
    if inference:
        workers.start("inference", inference)
    try:
        await workers.wait_polling(client)
        yield workers
    finally:
        workers.stop()


def _settings(
    client: Client, database_url: str, redis_url: str, model_url: str, **overrides: Any
) -> Settings:
    tier = {"url": model_url, "model": "ideal", "api": "chat"}
    return fleet_settings(
        client,
        database_url,
        redis_url,
        "stream-kill",
        domain="bench.peer_domain:domain",
        light=tier,
        heavy=tier,
        semantic_cache="off",
        plan_stream="on",
        speculation_max_calls=8,
        **overrides,
    )


FleetOf = Callable[..., AbstractAsyncContextManager[WorkerFleet]]
"""(inference workers, settings overrides) -> a fleet of two CPU workers and those."""


@pytest.fixture
def fleet_of(
    client: Client,
    database_url: str,
    redis_url: str,
    carrier_url: str,
    model_server: tuple[str, TokenTimedServer],
    tmp_path: Path,
) -> FleetOf:
    def started(inference: int, **overrides: Any) -> AbstractAsyncContextManager[WorkerFleet]:
        settings = _settings(client, database_url, redis_url, model_server[0], **overrides)
        return _fleet(client, settings, carrier_url, tmp_path, inference)

    return started


@pytest.fixture
async def fleet(fleet_of: FleetOf) -> AsyncIterator[WorkerFleet]:
    async with fleet_of(2, local_policy="off") as workers:  # every policy step on the pool
        yield workers


async def _start(
    client: Client, fleet: WorkerFleet, case: Case, name: str
) -> WorkflowHandle[AgentWorkflow, AgentResult]:
    """The run of `case`, from a tenant nobody has seen, on the fleet's queue."""
    return await client.start_workflow(
        AgentWorkflow.run,
        AgentRequest(question=case.question, tenant=f"cold-{uuid.uuid4().hex[:8]}"),
        id=f"{name}-{uuid.uuid4().hex[:8]}",
        task_queue=fleet.settings.task_queue,
    )


async def _first_early_read(handle: WorkflowHandle[AgentWorkflow, AgentResult]) -> None:
    """Until a tool read is scheduled while the plan is still being written."""
    for _ in range(400):
        async for event in handle.fetch_history_events():
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name in TOOL_ARGS:
                return
        await asyncio.sleep(0.05)
    raise AssertionError("no read started while the plan streamed")


async def _writing_the_plan(handle: WorkflowHandle[AgentWorkflow, AgentResult]) -> list[str]:
    """Who is running the run's model call now. A started activity's event reaches the
    history only when it closes, so the worker holding the plan in flight is read from
    the run's pending activities instead."""
    models = {names.ROUTE, names.PLAN}
    description = await handle.describe()
    return [
        pending.last_worker_identity
        for pending in description.raw_description.pending_activities
        if pending.activity_type.name in models and pending.last_worker_identity
    ]


def _holder(fleet: WorkerFleet, found: list[str], kind: str) -> FleetWorker:
    owners = [fleet.owner(i) for i in found]
    holders = [w for w in owners if w is not None and w.kind == kind]
    assert holders, f"no {kind} worker in {found}"
    return holders[-1]


async def _reads_recorded(
    handle: WorkflowHandle[AgentWorkflow, AgentResult],
) -> tuple[list[str], list[str]]:
    """(tool, arguments) of every tool activity scheduled in the run's history, and the
    tool of every read recorded as a local activity (its marker holds no arguments): a
    read the final plan runs itself, once the early reads' window has closed."""
    reads = []
    local = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            details = event.marker_recorded_event_attributes.details
            if "data" in details:
                kind = json.loads(details["data"].payloads[0].data).get("activity_type")
                if kind in TOOL_ARGS:
                    local.append(kind)
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attrs = event.activity_task_scheduled_event_attributes
        if attrs.activity_type.name in TOOL_ARGS:
            args = json.loads(attrs.input.payloads[0].data)
            reads.append((attrs.activity_type.name, _chosen(attrs.activity_type.name, args)))
    return canonical(reads), sorted(local)


async def _model_attempts(handle: WorkflowHandle[AgentWorkflow, AgentResult]) -> int:
    """The most attempts any model call of the run took."""
    models = {names.ROUTE, names.PLAN}
    scheduled: dict[int, str] = {}
    most = 0
    async for event in handle.fetch_history_events():
        attrs = event.activity_task_scheduled_event_attributes
        if attrs.activity_type.name:
            scheduled[event.event_id] = attrs.activity_type.name
        started = event.activity_task_started_event_attributes
        if scheduled.get(started.scheduled_event_id) in models:
            most = max(most, started.attempt)
    return most


def _chosen(tool: str, args: object) -> dict[str, object]:
    """The arguments a model chooses (not the actor and tenant the workflow adds)."""
    assert isinstance(args, dict), args
    return {k: args[k] for k in TOOL_ARGS[tool] if k in args}


@pytest.mark.parametrize("kind", ["inference", "cpu"])
@pytest.mark.parametrize(
    ("shape", "named"),
    [
        ("4-wide", False),
        # Names its order: that read starts at once and the planner, given it as p1,
        # streams the chain's reads after it (`inference.llm.given_reads`).
        ("chain", True),
    ],
)
async def test_a_worker_killed_while_the_plan_streams_loses_nothing(
    client: Client, fleet: WorkerFleet, kind: WorkerKind, shape: str, named: bool
) -> None:
    case = Case(shape, 1, named=named, batch=batch_name(uuid.uuid4().int % 600))
    handle = await _start(client, fleet, case, f"stream-kill-{kind}")
    await _first_early_read(handle)
    # The worker of `kind` that holds the run: for an inference worker, the one running the
    # model call that writes the plan (the route's, where the cascade plans in it); for a
    # CPU worker, the one that took the run's latest workflow task.
    found = await _writing_the_plan(handle) if kind == "inference" else await identities(handle)
    victim = _holder(fleet, found, kind)
    victim.kill()

    result = await asyncio.wait_for(handle.result(), timeout=120)
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * len(result.steps)
    made = canonical([(s.tool, _chosen(s.tool, s.args)) for s in result.steps])
    assert made == expected_calls(case.question), "exactly the question's calls"
    scheduled, local = await _reads_recorded(handle)
    assert set(scheduled) <= set(made) and len(scheduled) == len(set(scheduled))
    tools = sorted(json.loads(call)[0] for call in made)
    assert sorted([*(json.loads(c)[0] for c in scheduled), *local]) == tools, (
        "each read recorded once, early or not"
    )
    if kind == "inference":
        assert await _model_attempts(handle) > 1, "the plan in flight was written again"
    [survivor] = [w for w in fleet.of_kind(kind) if w is not victim]
    assert _holder(fleet, await identities(handle), kind) is survivor, "went on elsewhere"


async def _model_called(server: TokenTimedServer) -> None:
    """Until the model server has been asked (a model step is in flight)."""
    for _ in range(400):
        if server.log.requests:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no model request came")


async def test_a_cpu_worker_killed_during_its_local_model_call_loses_nothing(
    client: Client, fleet_of: FleetOf, model_server: tuple[str, TokenTimedServer]
) -> None:
    """`AGENTKEEL_LOCAL_POLICY=on`: the CPU worker that took the run makes the route (and
    the plan beside it) itself as a local activity. Killed during it, the other CPU worker
    takes the run on and makes the model call again; the run makes exactly its calls."""
    server = model_server[1]
    async with fleet_of(0, local_policy="on") as fleet:
        case = Case("4-wide", 1, named=False, batch=batch_name(uuid.uuid4().int % 600))
        handle = await _start(client, fleet, case, "local-model-kill")
        await _model_called(server)
        victim = _holder(fleet, await identities(handle), "cpu")
        victim.kill()

        result = await asyncio.wait_for(handle.result(), timeout=120)
        [survivor] = [w for w in fleet.of_kind("cpu") if w is not victim]
        took_over = _holder(fleet, await identities(handle), "cpu")
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] * len(result.steps)
    made = canonical([(s.tool, _chosen(s.tool, s.args)) for s in result.steps])
    assert made == expected_calls(case.question), "exactly the question's calls"
    scheduled, local = await _reads_recorded(handle)
    tools = sorted(json.loads(call)[0] for call in made)
    assert sorted([*(json.loads(c)[0] for c in scheduled), *local]) == tools, (
        "each read recorded once"
    )
    assert result.usage is not None
    assert server.log.requests > result.usage.calls, "the model call in flight was made again"
    assert took_over is survivor, "went on elsewhere"
    assert not set(await _queued(handle)) & set(names.LOCAL_POLICY_STEPS), "none on a queue"


async def _queued(handle: WorkflowHandle[AgentWorkflow, AgentResult]) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
