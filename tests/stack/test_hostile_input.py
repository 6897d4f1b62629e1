"""Malformed and hostile requests: every run ends at once with a named error, or completes.

Inputs arrive as JSON from any Temporal SDK, so they are started here the way another
service would (by workflow name, raw JSON values), including shapes no Python client would
send, and payloads built by hand that may not even decode.
"""

from __future__ import annotations

import asyncio
import random
import string
import time
from typing import Any

import pytest
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from agentkeel.schemas import errors
from agentkeel.schemas.result import AgentResult, StepStatus
from tests.support.agent_stack import AgentStack, StackFactory
from tests.support.fakes import FakeScriptedPolicy
from tests.support.hostile import HOSTILE_TEXT, PARALLEL_STARTS, payload, run_to_end, running_on

FUZZ_REQUESTS = 420
FUZZ_PAYLOADS = 80
REQUEST_ERRORS = (errors.INVALID_REQUEST, errors.UNDECODABLE_PAYLOAD)


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False, 0, -1, 2**63, 1.5, float("1e308")])
    if kind == 2:
        return "".join(rng.choice(string.printable) for _ in range(rng.randrange(0, 40)))
    if kind == 3:
        return rng.choice(HOSTILE_TEXT)
    if kind == 4:
        return "x" * rng.choice([0, 1, 65, 5000, 20_000])
    if kind == 5:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    keys = ["question", "tenant", "conversation_id", "actor", "options", "request_id", "extra"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(0, 5))}


def malformed_request(rng: random.Random, index: int) -> Any:
    """A request that is wrong in one or more ways (or, now and then, hostile but valid)."""
    base: dict[str, Any] = {"question": "Where is order 1001?"}
    choice = index % 14
    if choice == 0:
        return random_json(rng)
    if choice == 1:
        return {**base, "question": rng.choice(["", "   ", "\x00", "hi\x00there", "\x07bell"])}
    if choice == 2:
        return {**base, "tenant": rng.choice(["", "a" * 65, "has space", "ten\x00ant", "../x"])}
    if choice == 3:
        return {**base, "conversation_id": rng.choice(["x" * 4096, "c\x00", "", "a b"])}
    if choice == 4:
        return {**base, "actor": random_json(rng)}
    if choice == 5:
        return {**base, "actor": {"role": "customer"}}  # no customer id
    if choice == 6:
        return {**base, "actor": {"role": "staff", "customer_id": 3}}
    if choice == 7:
        return {**base, "options": {"max_concurrency": rng.choice([0, -1, 10_000, "5"])}}
    if choice == 8:
        return {**base, "options": {"max_plan_steps": rng.choice([0, 1000]), "x": 1}}
    if choice == 9:
        return {**base, rng.choice(["Question", "prompt", "__proto__"]): "x"}
    if choice == 10:
        return {**base, "request_id": rng.choice(["", "r" * 65, "r\x00", "has/slash"])}
    if choice == 11:
        return {"question": "x" * rng.choice([4001, 100_000])}
    if choice == 12:
        return [base]
    # Valid but hostile: these run for real and must complete.
    return {
        "question": rng.choice(HOSTILE_TEXT),
        "tenant": f"fuzz-{index}",
        "actor": rng.choice(
            [{"role": "customer", "customer_id": rng.randrange(1, 10**6)}, {"role": "staff"}, {}]
        ),
        "options": {"use_cache": rng.random() < 0.5},
    }


def hostile_payload(rng: random.Random) -> RawValue:
    """A request payload built by hand that may not even decode: nested past (or just under)
    the decoder's depth limit, random bytes, a byte that is not UTF-8, a cut-off document,
    or an encoding no converter knows."""
    request = b'{"question": "where is order 1001?"}'
    kind = rng.randrange(5)
    if kind == 0:
        depth = rng.randrange(150, 400)
        opener, closer = rng.choice([(b"[", b"]"), (b'{"question": ', b"}")])
        return RawValue(payload(opener * depth + b'"x"' + closer * depth))
    if kind == 1:
        return RawValue(payload(rng.randbytes(rng.randrange(0, 64))))
    if kind == 2:
        at = rng.randrange(len(request))
        return RawValue(payload(request[:at] + bytes([rng.randrange(0x80, 0x100)]) + request[at:]))
    if kind == 3:
        return RawValue(payload(request[: rng.randrange(len(request))]))
    encodings = [b"binary/unknown", b"", b"json/plain\x00", b"binary/encrypted", b"x" * 300]
    encoding = rng.choice(encodings)
    return RawValue(payload(request, encoding))


async def test_no_input_or_two_inputs_fail_at_once_naming_the_problem(
    stack: AgentStack,
) -> None:
    for args in ([], [{"question": "a"}, {"question": "b"}]):
        started = time.monotonic()
        outcome, cause = await run_to_end(stack.client, stack.task_queue, args)
        assert outcome == "failed" and isinstance(cause, ApplicationError)
        assert cause.type == errors.INVALID_REQUEST and cause.non_retryable
        assert f"got {len(args)}" in cause.message
        assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("request_json", "named"),
    [
        ({"question": "where is\x00 order 1001"}, "question"),
        ({"question": "hi", "tenant": "t" * 5000}, "tenant"),
        ({"question": "hi", "conversation_id": "c" * 5000}, "conversation_id"),
        ({"question": "hi", "actor": {"role": "customer"}}, "actor"),
        ({"question": "hi", "actor": {"role": "admin"}}, "actor.role"),
        ({"question": "hi", "options": {"max_tool_calls": 0}}, "options.max_tool_calls"),
    ],
)
async def test_bad_fields_fail_the_first_workflow_task_with_the_field_named(
    stack: AgentStack, request_json: dict[str, Any], named: str
) -> None:
    outcome, cause = await run_to_end(stack.client, stack.task_queue, [request_json])
    assert outcome == "failed" and isinstance(cause, ApplicationError)
    assert cause.type == errors.INVALID_REQUEST
    assert named in cause.message and len(cause.message) <= 2000


async def test_a_question_naming_hundreds_of_orders_is_refused_before_anything_runs(
    stack: AgentStack,
) -> None:
    orders = " ".join(f"#{1000 + i}" for i in range(400))
    result = await stack.ask(f"Where are my orders {orders}?")
    assert result.plan_error is not None and result.plan_error.type == errors.PLAN_TOO_LARGE
    assert result.steps == []
    history = await stack.client.get_workflow_handle(result.workflow_id).fetch_history()
    assert len(history.to_json()) < 500_000


async def test_fan_out_and_total_calls_are_capped_with_named_errors(
    make_stack: StackFactory,
) -> None:
    plan = {
        "steps": [
            {"id": "s1", "tool": "list_orders", "args": {"customer_id": 1, "limit": 50}},
            {
                "id": "s2",
                "tool": "get_order",
                "for_each": "$s1.order_ids",
                "args": {"order_id": "$item"},
            },
        ]
    }
    stack = await make_stack(policy=FakeScriptedPolicy([plan]))
    result = await stack.ask("all of them", options={"max_fan_out": 2, "max_replans": 0})
    fanned = next(s for s in result.steps if s.id == "s2")
    if fanned.status == StepStatus.FAILED:  # the customer has more than two orders
        assert fanned.error is not None and fanned.error.type == errors.FAN_OUT_TOO_LARGE
    capped = await stack.ask("all of them", options={"max_tool_calls": 1, "max_replans": 0})
    second = next(s for s in capped.steps if s.id == "s2")
    assert second.error is not None and second.error.type == errors.TOOL_CALL_LIMIT


async def test_malformed_and_hostile_requests_all_end_with_no_run_left_running(
    stack: AgentStack,
) -> None:
    rng = random.Random(20261201)
    inputs = [malformed_request(rng, i) for i in range(FUZZ_REQUESTS)]
    inputs += [hostile_payload(rng) for _ in range(FUZZ_PAYLOADS)]
    slots = asyncio.Semaphore(PARALLEL_STARTS)

    async def one(value: Any) -> tuple[str, Any]:
        async with slots:
            return await run_to_end(stack.client, stack.task_queue, [value])

    outcomes = await asyncio.gather(*(one(v) for v in inputs))
    for value, (outcome, detail) in zip(inputs, outcomes, strict=True):
        if outcome == "failed":
            assert isinstance(detail, ApplicationError), (value, detail)
            assert detail.type in REQUEST_ERRORS and detail.non_retryable, (value, detail)
        else:
            assert not isinstance(value, RawValue), value
            assert isinstance(detail, AgentResult) and detail.answer, value
    assert sum(1 for o, _ in outcomes if o == "failed") > FUZZ_REQUESTS // 2
    assert await running_on(stack.client, stack.task_queue) == []
