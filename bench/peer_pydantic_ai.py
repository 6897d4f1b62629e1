"""Pydantic AI's Temporal durability as a peer: an `Agent` with the `TemporalDurability`
capability (the successor of the deprecated `TemporalAgent` wrapper), its
`PydanticAIPlugin` on the client, and a `FunctionModel` at the model boundary.

Every model request and every tool call is an activity, as Pydantic AI runs them; the
tool calls of one model response run in parallel. The fake model answers each request
with the ideal next round of `bench.peer_fakes` (all ready calls in one response), then
with the answer: one model turn per level of the plan, plus one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalDurability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from bench import peer_fakes as fakes

WORKFLOW = "BenchPydanticAiWorkflow"
_ACTIVITY_TIMEOUT = timedelta(seconds=30)


async def _ideal_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The boundary fake: reads the question and the tool results so far, returns the next
    round's calls (the step id as the tool-call id) or, when none is left, the answer."""
    await fakes.model_turn()
    question, outputs = "", {}
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                question = part.content
            elif isinstance(part, ToolReturnPart):
                outputs[part.tool_call_id] = fakes.as_output(part.content)
    calls = fakes.next_round(question, outputs)
    if not calls:
        return ModelResponse(parts=[TextPart(fakes.ANSWER)])
    return ModelResponse(
        parts=[ToolCallPart(c.tool, c.args, tool_call_id=c.step_id) for c in calls]
    )


async def search_kb(query: str) -> dict[str, Any]:
    """Search the knowledge base."""
    return await fakes.run_tool("search_kb", {"query": query})


async def get_order(order_id: int) -> dict[str, Any]:
    """Look up an order."""
    return await fakes.run_tool("get_order", {"order_id": order_id})


async def check_inventory(sku: str) -> dict[str, Any]:
    """Stock of a SKU."""
    return await fakes.run_tool("check_inventory", {"sku": sku})


async def track_shipment(tracking_number: str) -> dict[str, Any]:
    """Where a shipment is."""
    return await fakes.run_tool("track_shipment", {"tracking_number": tracking_number})


AGENT: Agent[None, str] = Agent(
    FunctionModel(_ideal_model, model_name="bench-ideal"),
    name="bench_peer",
    tools=[search_kb, get_order, check_inventory, track_shipment],
    capabilities=[
        TemporalDurability(activity_config=ActivityConfig(start_to_close_timeout=_ACTIVITY_TIMEOUT))
    ],
)


@workflow.defn(name=WORKFLOW)
class BenchPydanticAiWorkflow:
    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, question: str) -> str:
        result = await AGENT.run(question)
        return result.output


async def client_for(target: str, namespace: str) -> Client:
    """A client with Pydantic AI's data converter (the plugin sets it on the client)."""
    return await Client.connect(target, namespace=namespace, plugins=[PydanticAIPlugin()])


def worker(client: Client, task_queue: str, *, sandboxed: bool) -> Worker:
    """The agent's workflow and activities on one queue (the plugin registers the activities
    from `__pydantic_ai_agents__`, and passes `pydantic_ai` through the sandbox)."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[BenchPydanticAiWorkflow],
        workflow_runner=fakes.workflow_runner(sandboxed),
    )
