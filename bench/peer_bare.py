"""Bare Temporal with agentkeel's hops, shaped per plan: the reference `bench.peers` sets
beside agentkeel.

The same sequential stages as an unsure `AgentWorkflow` run, in the same places: a local
activity (the declined local route offer), route with its plan made beside it on a second
queue (the inference queue: one model time, the two calls overlap), the plan's tool calls
as local activities, each started the moment its dependencies have returned (as the DAG
scheduler does), the answer filled from the outputs (the plan carried it) and a local
activity (the run record). No LangGraph, no policy, no Postgres, no patch markers, no
search attributes: what agentkeel costs beyond this is its orchestration.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from bench import peer_fakes as fakes
    from bench.dag_shapes import shape_named_in

WORKFLOW = "BenchBarePlanWorkflow"
_TIMEOUT = timedelta(seconds=30)


@activity.defn(name="bench_peer_bare_local")
async def bare_local(text: str) -> str:
    """The local route offer (declined) and the run record: no I/O, like the bench's."""
    return text


@activity.defn(name="bench_peer_bare_plan")
async def bare_plan(question: str) -> list[dict[str, Any]]:
    """Route and plan, side by side: one fake model time, returning the named shape's
    steps and dependencies."""
    await fakes.model_turn()
    shape = shape_named_in(question)
    return [
        {"id": s.id, "tool": s.tool, "args": s.args, "deps": shape.deps[s.id]}
        for s in shape.plan.steps
    ]


@activity.defn(name="bench_peer_bare_tool")
async def bare_tool(call: dict[str, Any]) -> dict[str, Any]:
    """One tool call; its `$ref` arguments resolved against the outputs of its dependencies."""
    step = call["step"]
    args = fakes.resolved_args(step["args"], call["outputs"])
    return await fakes.run_tool(step["tool"], args)


@workflow.defn(name=WORKFLOW)
class BenchBarePlanWorkflow:
    @workflow.run
    async def run(self, question: str) -> str:
        inference = workflow.info().task_queue + "-inference"
        await workflow.execute_local_activity(bare_local, question, start_to_close_timeout=_TIMEOUT)
        steps = await workflow.execute_activity(
            bare_plan, question, task_queue=inference, start_to_close_timeout=_TIMEOUT
        )
        outputs: dict[str, Any] = {}
        done: dict[str, asyncio.Task[None]] = {}

        async def run_step(step: dict[str, Any]) -> None:
            await asyncio.gather(*(done[d] for d in step["deps"]))
            mine = {d: outputs[d] for d in step["deps"]}
            outputs[step["id"]] = await workflow.execute_local_activity(
                bare_tool, {"step": step, "outputs": mine}, start_to_close_timeout=_TIMEOUT
            )

        for step in steps:  # plan order is topological
            done[step["id"]] = asyncio.create_task(run_step(step))
        await asyncio.gather(*done.values())
        answer = fakes.ANSWER
        await workflow.execute_local_activity(bare_local, answer, start_to_close_timeout=_TIMEOUT)
        return answer


def workers(client: Client, task_queue: str, *, sandboxed: bool) -> list[Worker]:
    """The workflow and tools on `task_queue`, the model calls on its `-inference` twin."""
    return [
        Worker(
            client,
            task_queue=task_queue,
            workflows=[BenchBarePlanWorkflow],
            activities=[bare_local, bare_tool],
            workflow_runner=fakes.workflow_runner(sandboxed),
        ),
        Worker(client, task_queue=task_queue + "-inference", activities=[bare_plan]),
    ]
