"""Temporal's OpenAI Agents integration as a peer, at its documented best.

The agent runs in a workflow through `OpenAIAgentsPlugin`, and its model is the Agents
SDK's own OpenAI chat-completions model (`OpenAIProvider(use_responses=False)`) pointed at
the benchmark's token-timed server: the SDK pays for its own prompts, tool schemas,
parsing and HTTP. Levers, each the integration's or the SDK's own:

- **model calls as local activities** (`ModelActivityParameters(use_local_activity=True)`):
  no task-queue hop and no activity task per model turn;
- **no model turn after the tools**: `tool_use_behavior=StopAtTools(["final_answer"])` with
  a `final_answer` function tool that runs in the workflow (deterministic, no activity),
  so an ideal model sends the answer with the last round of tools and the run ends when
  that round returns;
- **parallel tool calls** (`ModelSettings(parallel_tool_calls=True)`): every ready call in
  one model response; the SDK runs the function tools of a response concurrently;
- **tools as activities**, `activity_as_tool` (the integration's tool form, on the task
  queue), or as local activities (`local_tools=True`: a function tool built the way
  `activity_as_tool` builds one, awaiting `workflow.execute_local_activity`);
- **inline activations** (`debug_mode=True`) on an unsandboxed worker, as every system of
  `bench.peers` runs; tracing off (there is no key and nowhere to send traces).

Each worker serves one tool form: it registers the workflow class of that form, both
under one workflow name, so `RUN` starts either on the queue of its worker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from agents import (
        Agent,
        FunctionTool,
        ModelSettings,
        OpenAIProvider,
        RunContextWrapper,
        Runner,
        StopAtTools,
        Tool,
        function_tool,
        set_tracing_disabled,
    )
    from agents.function_schema import function_schema
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.workflow import activity_as_tool

    from bench.peer_fakes import inline_worker, run_tool

WORKFLOW = "BenchOpenAiAgentsWorkflow"
LOCAL_TOOLS_SUPPORTED = True
MODEL = "ideal"
_TIMEOUT = timedelta(seconds=30)
_MAX_TURNS = 10
"""More than the deepest shape needs (a chain of 4: four turns)."""


async def _output(tool: str, args: dict[str, Any]) -> str:
    """A tool's output as the model reads it: JSON text (the SDK sends `str(result)`), or
    for a failed call the text the SDK's default tool-error function writes. A tool of
    `activity_as_tool` has no failure handler (an activity error would end the run), so
    the activity reports the failure to the model itself, as the SDK's `function_tool` does."""
    try:
        return json.dumps(await run_tool(tool, args))
    except ApplicationError as failed:
        return f"An error occurred while running the tool. Please try again. Error: {failed}"


@activity.defn(name="search_kb")
async def search_kb(query: str) -> str:
    """Search the knowledge base."""
    return await _output("search_kb", {"query": query})


@activity.defn(name="get_order")
async def get_order(order_id: int) -> str:
    """Look up an order."""
    return await _output("get_order", {"order_id": order_id})


@activity.defn(name="check_inventory")
async def check_inventory(sku: str) -> str:
    """Stock of a SKU."""
    return await _output("check_inventory", {"sku": sku})


@activity.defn(name="track_shipment")
async def track_shipment(tracking_number: str) -> str:
    """Where a shipment is."""
    return await _output("track_shipment", {"tracking_number": tracking_number})


TOOLS: list[Callable[..., Any]] = [search_kb, get_order, check_inventory, track_shipment]


async def final_answer_impl(answer: str) -> str:
    """Give the final answer to the user."""
    # Async: the SDK runs a sync function tool in a thread, which a workflow cannot.
    return answer


final_answer = function_tool(final_answer_impl, name_override="final_answer")
"""The answer tool: in the workflow, no activity; `StopAtTools` ends the run with its
output once the round it came with has returned."""


def local_activity_as_tool(fn: Callable[..., Any]) -> Tool:
    """`fn` as a function tool that runs it as a local activity: the same schema and
    argument handling as `activity_as_tool`, `execute_local_activity` in place of
    `execute_activity`."""
    schema = function_schema(fn)
    name = schema.name

    async def run_local(ctx: RunContextWrapper[Any], input: str) -> str:
        args, _ = schema.to_call_args(schema.params_pydantic_model(**json.loads(input)))
        result = await workflow.execute_local_activity(
            name, args=args, start_to_close_timeout=_TIMEOUT
        )
        return str(result)

    return FunctionTool(
        name=name,
        description=schema.description or "",
        params_json_schema=schema.params_json_schema,
        on_invoke_tool=run_local,
        strict_json_schema=True,
    )


def _tools(local: bool) -> list[Tool]:
    if local:
        return [local_activity_as_tool(t) for t in TOOLS]
    return [activity_as_tool(t, start_to_close_timeout=_TIMEOUT) for t in TOOLS]


async def _answer(question: str, *, local_tools: bool) -> str:
    agent: Agent[None] = Agent(
        name="bench_peer",
        instructions="Answer the question with the tools, then call final_answer.",
        model=MODEL,
        model_settings=ModelSettings(parallel_tool_calls=True),
        tools=[*_tools(local_tools), final_answer],
        tool_use_behavior=StopAtTools(stop_at_tool_names=["final_answer"]),
    )
    result = await Runner.run(agent, question, max_turns=_MAX_TURNS)
    return str(result.final_output)


@workflow.defn(name=WORKFLOW)
class BenchOpenAiAgentsWorkflow:
    """Tools as activities on the task queue."""

    @workflow.run
    async def run(self, question: str) -> str:
        return await _answer(question, local_tools=False)


@workflow.defn(name=WORKFLOW)
class BenchOpenAiAgentsLocalToolsWorkflow:
    """Tools as local activities."""

    @workflow.run
    async def run(self, question: str) -> str:
        return await _answer(question, local_tools=True)


RUN = BenchOpenAiAgentsWorkflow.run


async def client_for(target: str, namespace: str, model_url: str) -> Client:
    """A client whose plugin sets the integration's data converter and, on its workers, the
    model activity: the SDK's chat-completions model at `model_url`, run as a local activity."""
    # No OpenAI key, nowhere to send traces: the SDK would warn about each run.
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    set_tracing_disabled(True)
    provider = OpenAIProvider(base_url=model_url, api_key="bench", use_responses=False)
    plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(
            start_to_close_timeout=_TIMEOUT, use_local_activity=True
        ),
        model_provider=provider,
    )
    return await Client.connect(target, namespace=namespace, plugins=[plugin])


def workers(client: Client, task_queue: str, *, local_tools: bool) -> list[Worker]:
    """One worker: the workflow of the tool form, the tools (activities either way: a
    local activity runs on the worker that schedules it) and, from the plugin, the model
    activity."""
    flow = BenchOpenAiAgentsLocalToolsWorkflow if local_tools else BenchOpenAiAgentsWorkflow
    return [inline_worker(client, task_queue, flow, TOOLS)]
