"""Temporal's OpenAI Agents integration as a peer: `OpenAIAgentsPlugin` (model calls as
activities), the tools as activities through `activity_as_tool`, and a fake `Model` from
a `ModelProvider` at the boundary, as the integration's own tests do (`TestModel`).

The fake answers each model call with the ideal next round of `bench.peer_fakes`: all
ready function calls in one response (the Agents runner runs them concurrently), then
the answer message.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from agents import (
        Agent,
        Model,
        ModelProvider,
        ModelResponse,
        Runner,
        Usage,
        set_tracing_disabled,
    )
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.workflow import activity_as_tool

    from bench import peer_fakes as fakes

WORKFLOW = "BenchOpenAiAgentsWorkflow"
_ACTIVITY_TIMEOUT = timedelta(seconds=30)
_MAX_TURNS = 10
"""More than the deepest shape needs (a chain of 4: five turns)."""


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


class IdealModel(Model):
    """The boundary fake: the next round's function calls (the step id as the call id), or,
    when every step has returned, the answer."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        await fakes.model_turn()
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        question, outputs = "", {}
        for item in items:
            if _field(item, "role") == "user" and isinstance(_field(item, "content"), str):
                question = _field(item, "content")
            elif _field(item, "type") == "function_call_output":
                outputs[_field(item, "call_id")] = fakes.as_output(_field(item, "output"))
        calls = fakes.next_round(question, outputs)
        output: list[Any] = [
            ResponseFunctionToolCall(
                arguments=json.dumps(c.args),
                call_id=c.step_id,
                name=c.tool,
                type="function_call",
                id=f"fc_{c.step_id}",
                status="completed",
            )
            for c in calls
        ] or [_answer()]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the benchmark does not stream")


def _answer() -> ResponseOutputMessage:
    text = ResponseOutputText(text=fakes.ANSWER, annotations=[], type="output_text")
    return ResponseOutputMessage(
        id="msg", content=[text], role="assistant", status="completed", type="message"
    )


class IdealModelProvider(ModelProvider):
    def get_model(self, model_name: str | None) -> Model:
        return IdealModel()


# The tools return JSON text: `activity_as_tool` hands the model `str(result)`.
@activity.defn(name="search_kb")
async def search_kb(query: str) -> str:
    """Search the knowledge base."""
    return json.dumps(await fakes.run_tool("search_kb", {"query": query}))


@activity.defn(name="get_order")
async def get_order(order_id: int) -> str:
    """Look up an order."""
    return json.dumps(await fakes.run_tool("get_order", {"order_id": order_id}))


@activity.defn(name="check_inventory")
async def check_inventory(sku: str) -> str:
    """Stock of a SKU."""
    return json.dumps(await fakes.run_tool("check_inventory", {"sku": sku}))


@activity.defn(name="track_shipment")
async def track_shipment(tracking_number: str) -> str:
    """Where a shipment is."""
    args = {"tracking_number": tracking_number}
    return json.dumps(await fakes.run_tool("track_shipment", args))


TOOLS: list[Callable[..., Any]] = [search_kb, get_order, check_inventory, track_shipment]


@workflow.defn(name=WORKFLOW)
class BenchOpenAiAgentsWorkflow:
    @workflow.run
    async def run(self, question: str) -> str:
        agent: Agent[None] = Agent(
            name="bench_peer",
            instructions="Answer with the tools.",
            tools=[activity_as_tool(t, start_to_close_timeout=_ACTIVITY_TIMEOUT) for t in TOOLS],
        )
        result = await Runner.run(agent, question, max_turns=_MAX_TURNS)
        return str(result.final_output)


async def client_for(target: str, namespace: str) -> Client:
    """A client whose plugin sets the integration's data converter and, on the workers, the
    model activity served by the fake provider."""
    # No OpenAI key, nowhere to send traces: the SDK would warn about each run.
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    set_tracing_disabled(True)
    plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=_ACTIVITY_TIMEOUT),
        model_provider=IdealModelProvider(),
    )
    return await Client.connect(target, namespace=namespace, plugins=[plugin])


def worker(client: Client, task_queue: str, *, sandboxed: bool) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[BenchOpenAiAgentsWorkflow],
        activities=TOOLS,
        workflow_runner=fakes.workflow_runner(sandboxed),
    )
