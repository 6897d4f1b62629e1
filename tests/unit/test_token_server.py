"""The token-timed model server of the benchmarks: it answers in each caller's own format,
as an ideal model would, and takes as long as the speed it was given says."""

from __future__ import annotations

import json
import time
from typing import Any

import jsonschema
import openai
import pytest
from openai import AsyncOpenAI

from agentkeel.inference.engines.openai_output import logprobs_of
from agentkeel.inference.llm.confidence import label_confidence
from agentkeel.inference.llm.plan_schema import plan_json_schema
from bench.ideal_model import IdealShapeModel
from bench.peer_cases import result_of
from bench.peer_fakes import ANSWER
from bench.token_apart import served_apart
from bench.token_server import Speed, serving
from bench.token_text import split_tokens

SLOW_ENOUGH = Speed("test", ttft_s=0.08, per_token_s=0.01)
SECOND_TO_FIRST_TOKEN = Speed("test", ttft_s=1.0, per_token_s=0.0)
LABELS = ["order_status", "refund", "policy", "uncertain"]


def _tool(name: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties or {}}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


TOOLS = [_tool(n) for n in ("search_kb", "get_order", "check_inventory", "track_shipment")]


async def test_tool_rounds_resolve_references_and_the_answer_tool_rides_the_last_round() -> None:
    tools = [*TOOLS, _tool("final_result", {"response": {"type": "string"}})]
    async with serving(IdealShapeModel(), SLOW_ENOUGH) as (url, server):
        model: Any = AsyncOpenAI(
            base_url=url, api_key="bench", max_retries=0
        )  # loosely typed calls
        question = "bench diamond #1 of aa: order 70008"
        messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
        rounds = []
        while True:
            reply = await model.chat.completions.create(
                model="ideal", messages=messages, tools=tools
            )
            calls = reply.choices[0].message.tool_calls or []
            rounds.append([(c.function.name, json.loads(c.function.arguments)) for c in calls])
            if any(c.function.name == "final_result" for c in calls):
                break
            messages.append({"role": "assistant", "tool_calls": [c.model_dump() for c in calls]})
            for c in calls:
                content = json.dumps(result_of(c.function.name, json.loads(c.function.arguments)))
                messages.append({"role": "tool", "tool_call_id": c.id, "content": content})
    assert rounds == [
        [("get_order", {"order_id": 70008})],
        [
            ("check_inventory", {"sku": "SKU-70008"}),
            ("track_shipment", {"tracking_number": "TRK0000070008"}),
        ],
        [("search_kb", {"query": "Widget SKU-70008"}), ("final_result", {"response": ANSWER})],
    ]
    assert server.log.requests == 3


async def test_a_call_takes_time_to_first_token_plus_its_tokens_streamed_one_by_one() -> None:
    async with serving(IdealShapeModel(), SLOW_ENOUGH) as (url, server):
        model: Any = AsyncOpenAI(
            base_url=url, api_key="bench", max_retries=0
        )  # loosely typed calls
        started = time.perf_counter()
        stream = await model.chat.completions.create(
            model="ideal",
            messages=[{"role": "user", "content": "User: bench 4-wide\nAgent:"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        arrivals, text, usage = [], "", None
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                arrivals.append(time.perf_counter() - started)
                text += chunk.choices[0].delta.content
            if chunk.usage is not None:
                usage = chunk.usage
    tokens = split_tokens(text)
    assert usage is not None and usage.completion_tokens == len(tokens) == len(arrivals)
    assert arrivals[0] >= SLOW_ENOUGH.ttft_s
    assert arrivals[-1] >= SLOW_ENOUGH.ttft_s + (len(tokens) - 1) * SLOW_ENOUGH.per_token_s
    assert server.log.output_tokens == len(tokens)


async def test_a_route_reports_its_certainty_and_a_plan_fits_agentkeels_schema() -> None:
    schema = plan_json_schema(LABELS)
    async with serving(IdealShapeModel(route_confidence=0.6), Speed("instant", 0, 0)) as (
        url,
        _,
    ):
        model: Any = AsyncOpenAI(
            base_url=url, api_key="bench", max_retries=0
        )  # loosely typed calls
        choice = {"type": "string", "enum": LABELS}
        routed = await model.chat.completions.create(
            model="ideal",
            messages=[{"role": "user", "content": "User: bench chain #2 of aa\nIntent:"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": choice, "strict": True},
            },
            logprobs=True,
            top_logprobs=20,
        )
        planned = await model.chat.completions.create(
            model="ideal",
            messages=[
                {"role": "user", "content": "User: bench diamond #2 of aa: order 70016\nPlan JSON:"}
            ],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": schema, "strict": True},
            },
        )
    label = json.loads(routed.choices[0].message.content or "")
    confidence = label_confidence(logprobs_of(routed.choices[0].logprobs), LABELS)
    assert label in LABELS and confidence is not None and abs(confidence - 0.6) < 1e-6
    document = json.loads(planned.choices[0].message.content or "")
    jsonschema.validate(document, schema)
    assert list(document) == ["intent", "rationale", "steps", "answer"]
    # Each step as a model writes it: its tool as the key of its arguments, its id its place.
    assert [next(iter(s)) for s in document["steps"]] == [
        "get_order",
        "check_inventory",
        "track_shipment",
        "search_kb",
    ]
    assert document["steps"][1] == {"check_inventory": {"sku": "$s1.items.0.sku"}}


async def test_the_server_in_a_process_of_its_own_takes_its_speed_and_counts() -> None:
    """`bench.peers` runs the server apart, as model servers are deployed: the speed set
    over HTTP is the one it answers at, its requests are counted, and the block's end
    stops the process."""
    async with served_apart(Speed("instant", 0.0, 0.0), route_confidence=0.5) as (url, remote):
        await remote.set_speed(SECOND_TO_FIRST_TOKEN)
        model: Any = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)
        started = time.perf_counter()
        reply = await model.chat.completions.create(
            model="ideal", messages=[{"role": "user", "content": "User: bench chain #2 of aa"}]
        )
        took = time.perf_counter() - started
        assert reply.choices[0].message.content == ANSWER
        assert took >= SECOND_TO_FIRST_TOKEN.ttft_s
        assert await remote.requests() == 1
        await remote.set_speed(Speed("instant", 0.0, 0.0))
        started = time.perf_counter()
        await model.chat.completions.create(
            model="ideal", messages=[{"role": "user", "content": "User: bench chain #2 of aa"}]
        )
        assert time.perf_counter() - started < SECOND_TO_FIRST_TOKEN.ttft_s
        assert await remote.requests() == 2
        await model.close()
    with pytest.raises(openai.APIConnectionError):  # the process is gone with the block
        await AsyncOpenAI(base_url=url, api_key="bench", max_retries=0).models.list()
