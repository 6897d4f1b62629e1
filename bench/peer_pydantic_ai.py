"""Pydantic AI's Temporal durability as a peer, at its documented best.

An `Agent` with the `TemporalDurability` capability (the successor of the deprecated
`TemporalAgent` wrapper) and `PydanticAIPlugin` on the client. Its model is Pydantic AI's
own `OpenAIChatModel` pointed at the benchmark's token-timed server, so Pydantic AI pays
for its own prompts, tool schemas, parsing and HTTP. Every model request is an activity
on the task queue: Pydantic AI offers no local-activity model request. Levers, each
Pydantic AI's own:

- **no model turn after the tools**: the output is a tool (`ToolOutput`, named
  `final_result`, the default) and `end_strategy="exhaustive"`, so the tool calls an
  ideal model sends with the output tool still run and the run ends when they return;
- **parallel tool calls** (`ModelSettings(parallel_tool_calls=True)`): every ready call in
  one response; Pydantic AI runs a response's function tools in parallel;
- **tools as activities on the task queue**, the capability's way (it registers one
  call-tool activity per toolset); or (`local_tools=True`) each tool with its activity
  wrapping turned off, `metadata={"temporal": False}` (documented for async tools: the
  tool runs in the workflow), whose body runs the tool as a Temporal local activity;
- **inline activations** (`debug_mode=True`) on an unsandboxed worker, as every system of
  `bench.peers` runs.

The agents are built by `client_for`, which knows the model server's address; one model
server per process (the workflow classes read the agents built last).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent, ModelRetry, ModelSettings, Tool, ToolOutput
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalDurability
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from bench.peer_fakes import inline_worker, run_tool, tool_failure

WORKFLOW = "BenchPydanticAiWorkflow"
LOCAL_TOOLS_SUPPORTED = True
MODEL = "ideal"
_TIMEOUT = timedelta(seconds=30)
_INSTRUCTIONS = "Answer the question with the tools; give the answer with final_result."


# The tools as Pydantic AI runs them in its call-tool activity. A failed call is handed to
# the model with `ModelRetry`, Pydantic AI's way for a tool to ask the model to try again
# (its durable toolset carries it out of the activity as data).
async def _queued(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        return await run_tool(tool, args)
    except ApplicationError as failed:
        raise ModelRetry(str(failed)) from None


async def search_kb(query: str) -> dict[str, Any]:
    """Search the knowledge base."""
    return await _queued("search_kb", {"query": query})


async def get_order(order_id: int) -> dict[str, Any]:
    """Look up an order."""
    return await _queued("get_order", {"order_id": order_id})


async def check_inventory(sku: str) -> dict[str, Any]:
    """Stock of a SKU."""
    return await _queued("check_inventory", {"sku": sku})


async def track_shipment(tracking_number: str) -> dict[str, Any]:
    """Where a shipment is."""
    return await _queued("track_shipment", {"tracking_number": tracking_number})


# The same tools as local activities, each called from a workflow-side tool of its name.
@activity.defn(name="bench_pydantic_ai_tool")
async def tool_activity(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """One tool call, run as a local activity of the workflow."""
    return await run_tool(tool, args)


async def _local(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        result: dict[str, Any] = await workflow.execute_local_activity(
            tool_activity, args=[tool, args], start_to_close_timeout=_TIMEOUT
        )
    except (ActivityError, ApplicationError) as failed:  # a local activity's comes bare
        raise ModelRetry(str(tool_failure(failed))) from None
    return result


async def local_search_kb(query: str) -> dict[str, Any]:
    """Search the knowledge base."""
    return await _local("search_kb", {"query": query})


async def local_get_order(order_id: int) -> dict[str, Any]:
    """Look up an order."""
    return await _local("get_order", {"order_id": order_id})


async def local_check_inventory(sku: str) -> dict[str, Any]:
    """Stock of a SKU."""
    return await _local("check_inventory", {"sku": sku})


async def local_track_shipment(tracking_number: str) -> dict[str, Any]:
    """Where a shipment is."""
    return await _local("track_shipment", {"tracking_number": tracking_number})


ToolFn = Callable[..., Awaitable[dict[str, Any]]]
_QUEUED_TOOLS: list[ToolFn] = [search_kb, get_order, check_inventory, track_shipment]
_LOCAL_TOOLS: list[ToolFn] = [
    local_search_kb,
    local_get_order,
    local_check_inventory,
    local_track_shipment,
]


def build_agent(model_url: str, *, local_tools: bool) -> Agent[None, str]:
    """The agent of one tool form, its model at `model_url`."""
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=model_url, api_key="bench"))
    tools: list[Tool[None]]
    if local_tools:
        tools = [
            Tool(fn, name=fn.__name__.removeprefix("local_"), metadata={"temporal": False})
            for fn in _LOCAL_TOOLS
        ]
    else:
        tools = [Tool(fn) for fn in _QUEUED_TOOLS]
    return Agent(
        model,
        name="bench_peer_local" if local_tools else "bench_peer",
        instructions=_INSTRUCTIONS,
        tools=tools,
        output_type=ToolOutput(str, name="final_result"),
        end_strategy="exhaustive",
        model_settings=ModelSettings(parallel_tool_calls=True),
        capabilities=[
            TemporalDurability(activity_config=ActivityConfig(start_to_close_timeout=_TIMEOUT))
        ],
    )


@workflow.defn(name=WORKFLOW)
class BenchPydanticAiWorkflow:
    """Tools as activities on the task queue."""

    __pydantic_ai_agents__: list[Agent[None, str]] = []

    @workflow.run
    async def run(self, question: str) -> str:
        result = await BenchPydanticAiWorkflow.__pydantic_ai_agents__[0].run(question)
        return result.output


@workflow.defn(name=WORKFLOW)
class BenchPydanticAiLocalToolsWorkflow:
    """Tools as local activities, under the same workflow name (one class per worker)."""

    __pydantic_ai_agents__: list[Agent[None, str]] = []

    @workflow.run
    async def run(self, question: str) -> str:
        result = await BenchPydanticAiLocalToolsWorkflow.__pydantic_ai_agents__[0].run(question)
        return result.output


RUN = BenchPydanticAiWorkflow.run


async def client_for(target: str, namespace: str, model_url: str) -> Client:
    """A client with Pydantic AI's data converter; builds the agents for `model_url`."""
    BenchPydanticAiWorkflow.__pydantic_ai_agents__ = [build_agent(model_url, local_tools=False)]
    BenchPydanticAiLocalToolsWorkflow.__pydantic_ai_agents__ = [
        build_agent(model_url, local_tools=True)
    ]
    return await Client.connect(target, namespace=namespace, plugins=[PydanticAIPlugin()])


def workers(client: Client, task_queue: str, *, local_tools: bool) -> list[Worker]:
    """One worker: the workflow of the tool form; the plugin registers the agent's model
    and call-tool activities from `__pydantic_ai_agents__`."""
    flow: type[BenchPydanticAiWorkflow | BenchPydanticAiLocalToolsWorkflow]
    activities: list[Callable[..., Any]] = []
    if local_tools:
        flow, activities = BenchPydanticAiLocalToolsWorkflow, [tool_activity]
    else:
        flow = BenchPydanticAiWorkflow
    if not flow.__pydantic_ai_agents__:
        raise RuntimeError("no agent built: make the client with client_for first")
    return [inline_worker(client, task_queue, flow, activities)]
