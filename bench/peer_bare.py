"""Bare Temporal with one model stage: the reference for what Temporal itself costs.

No agent framework: a workflow that asks the model for a plan once, then runs it.

- **one model call**, an activity on the task queue: the token-timed server is asked for
  a plan document in agentkeel's plan schema
  (`agentkeel.inference.llm.plan_schema.plan_json_schema`, as `response_format`
  `json_schema`), through `openai.AsyncOpenAI`;
- **each step the moment its inputs have returned**: a tool activity per step (a local
  activity, or one on the task queue: `local_tools`), its `$ref` arguments resolved by
  agentkeel's own `resolve` against the outputs it names;
- **one replan where a step failed**: the plan is asked for again, the failed calls and
  their errors in the prompt, and run; a call the run already made with the same
  arguments is answered from its earlier output, not made again; at most one replan;
- **the answer filled from the plan's template** (`answer_template.fill`), or a constant
  where the plan has none: no model turn after the tools;
- **inline activations** (`debug_mode=True`) on an unsandboxed worker, as every system of
  `bench.peers` runs.

Nothing else: no router, no policy, no Postgres, no search attributes, no patch markers.
The model activity reaches the server through a client plugin (`client_for` knows the
address); each worker registers the workflow class of its tool form, both under one name.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from openai import AsyncOpenAI

    from agentkeel.inference.llm.plan_document import plan_fields
    from agentkeel.inference.llm.plan_schema import plan_json_schema
    from agentkeel.schemas.plan.answer_template import fill
    from agentkeel.workflows.dag.resolve import resolve
    from bench.peer_fakes import ANSWER, inline_worker, run_tool, tool_failure

WORKFLOW = "BenchBarePlanWorkflow"
LOCAL_TOOLS_SUPPORTED = True
MODEL = "ideal"
PLAN_ACTIVITY = "bench_bare_plan"
_TIMEOUT = timedelta(seconds=30)
_PROMPT = "Write the plan of tool calls that answers the question, as JSON.\n\nQuestion: {q}"


class BarePlanner:
    """The model stage: one chat-completions call for the plan document."""

    def __init__(self, model_url: str) -> None:
        self.model = AsyncOpenAI(base_url=model_url, api_key="bench", max_retries=0)

    @activity.defn(name=PLAN_ACTIVITY)
    async def plan(self, question: str, failures: list[str] | None = None) -> dict[str, Any]:
        schema = plan_json_schema(["lookup"])
        prompt = _PROMPT.format(q=question)
        if failures:
            prompt += "\n\nThe last plan's calls that failed:\n" + "\n".join(failures)
        reply = await self.model.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": prompt}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "plan", "schema": schema, "strict": True},
            },
        )
        document: dict[str, Any] = json.loads(reply.choices[0].message.content or "{}")
        return plan_fields(document)  # each step keyed by its tool: ids by position


@activity.defn(name="bench_bare_tool")
async def bare_tool(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """One tool call with its arguments resolved."""
    return await run_tool(tool, args)


def _deps(step: dict[str, Any]) -> set[str]:
    """The steps whose outputs `step`'s arguments read, and those it must follow."""
    refs = {
        value[1:].split(".")[0]
        for value in step["args"].values()
        if isinstance(value, str) and value.startswith("$")
    }
    return refs | set(step.get("after", []))


_REPLANS = 1


async def _run_plan(question: str, *, local_tools: bool) -> str:
    failures: list[str] = []
    made: dict[str, Any] = {}
    for _attempt in range(1 + _REPLANS):
        plan = await workflow.execute_activity(
            PLAN_ACTIVITY,
            args=[question, failures],
            result_type=dict,
            start_to_close_timeout=_TIMEOUT,
        )
        outputs, failures = await _run_steps(plan["steps"], made, local_tools=local_tools)
        if not failures:
            break
    template = plan.get("answer")
    return (fill(template, outputs) if template and not failures else None) or ANSWER


async def _run_steps(
    steps: list[dict[str, Any]], made: dict[str, Any], *, local_tools: bool
) -> tuple[dict[str, Any], list[str]]:
    """Each step the moment its inputs have returned: the outputs, and each failed call
    with its error (a step whose input failed is not run). `made` holds the run's calls
    that returned, by tool and arguments: a step repeating one takes its output."""
    outputs: dict[str, Any] = {}
    failures: list[str] = []
    done: dict[str, asyncio.Task[None]] = {}

    async def run_step(step: dict[str, Any]) -> None:
        await asyncio.gather(*(done[d] for d in _deps(step)))
        if not _deps(step) <= outputs.keys():
            return
        args = [step["tool"], resolve(step["args"], outputs)]
        call = json.dumps(args, sort_keys=True)
        if call in made:
            outputs[step["id"]] = made[call]
            return
        try:
            if local_tools:
                outputs[step["id"]] = await workflow.execute_local_activity(
                    bare_tool, args=args, start_to_close_timeout=_TIMEOUT
                )
            else:
                outputs[step["id"]] = await workflow.execute_activity(
                    bare_tool, args=args, start_to_close_timeout=_TIMEOUT
                )
        except (ActivityError, ApplicationError) as failed:  # a local activity's comes bare
            failures.append(f"{step['tool']} {json.dumps(args[1])}: {tool_failure(failed)}")
        else:
            made[call] = outputs[step["id"]]

    for step in steps:  # a plan names only earlier steps
        done[step["id"]] = asyncio.create_task(run_step(step))
    await asyncio.gather(*done.values())
    return outputs, failures


@workflow.defn(name=WORKFLOW)
class BenchBarePlanWorkflow:
    """Tools as activities on the task queue."""

    @workflow.run
    async def run(self, question: str) -> str:
        return await _run_plan(question, local_tools=False)


@workflow.defn(name=WORKFLOW)
class BenchBareLocalToolsWorkflow:
    """Tools as local activities."""

    @workflow.run
    async def run(self, question: str) -> str:
        return await _run_plan(question, local_tools=True)


RUN = BenchBarePlanWorkflow.run


async def client_for(target: str, namespace: str, model_url: str) -> Client:
    """A client with the default data converter and a plugin that gives its workers the
    model activity, pointed at `model_url`."""
    plugin = SimplePlugin("bench.bare", activities=[BarePlanner(model_url).plan])
    return await Client.connect(target, namespace=namespace, plugins=[plugin])


def workers(client: Client, task_queue: str, *, local_tools: bool) -> list[Worker]:
    """One worker: the workflow of the tool form, its tool activity and the model one."""
    flow = BenchBareLocalToolsWorkflow if local_tools else BenchBarePlanWorkflow
    return [inline_worker(client, task_queue, flow, [bare_tool])]
