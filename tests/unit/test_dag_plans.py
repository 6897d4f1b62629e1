"""Plans without Temporal: validation, ordering, reference resolution, caps, idempotency keys."""

from __future__ import annotations

import pytest

from agentkeel.schemas.errors import (
    DEPENDENCY_CYCLE,
    DUPLICATE_STEP,
    EMPTY_PLAN,
    INVALID_ARGUMENTS,
    MISSING_REFERENCE,
    UNKNOWN_TOOL,
)
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.validation import (
    PlanValidationError,
    critical_path_ms,
    topological_order,
    validate_plan,
)
from agentkeel.schemas.tools import TOOLS
from agentkeel.workflows.dag.resolve import ResolutionError, resolve
from agentkeel.workflows.dag.step_gates import SchedulerLimits
from tests.support.dag import plan


@pytest.mark.parametrize(
    ("bad", "kind", "mentions"),
    [
        (plan(), EMPTY_PLAN, "no steps"),
        (plan({"id": "a", "tool": "nope"}), UNKNOWN_TOOL, "nope"),
        (
            plan(
                {"id": "a", "tool": "search_kb", "args": {"query": "x"}},
                {"id": "a", "tool": "search_kb", "args": {"query": "y"}},
            ),
            DUPLICATE_STEP,
            "'a'",
        ),
        (plan({"id": "a", "tool": "get_order", "args": {}}), INVALID_ARGUMENTS, "order_id"),
        (
            plan({"id": "a", "tool": "get_order", "args": {"order_id": 1, "x": 2}}),
            INVALID_ARGUMENTS,
            "'x'",
        ),
        (
            plan({"id": "a", "tool": "get_order", "args": {"order_id": -4}}),
            INVALID_ARGUMENTS,
            "greater",
        ),
        (
            plan({"id": "a", "tool": "get_order", "args": {"order_id": "$zz.order_id"}}),
            MISSING_REFERENCE,
            "zz",
        ),
        (
            plan(
                {"id": "a", "tool": "get_order", "args": {"order_id": 1}},
                {"id": "b", "tool": "get_order", "args": {"order_id": "$a.items.x.sku"}},
            ),
            MISSING_REFERENCE,
            "indexes a list",
        ),
        (
            plan(
                {"id": "a", "tool": "get_order", "args": {"order_id": 1}},
                {"id": "b", "tool": "get_order", "args": {"order_id": "$a.status"}},
            ),
            INVALID_ARGUMENTS,
            "expects int",
        ),
        (
            plan({"id": "a", "tool": "check_inventory", "args": {"sku": "$item.sku"}}),
            MISSING_REFERENCE,
            "for_each",
        ),
        (
            plan(
                {"id": "a", "tool": "get_order", "args": {"order_id": 1}},
                {
                    "id": "b",
                    "tool": "check_inventory",
                    "for_each": "$a.status",
                    "args": {"sku": "$item"},
                },
            ),
            INVALID_ARGUMENTS,
            "not a list",
        ),
        (
            plan(
                {"id": "a", "tool": "get_order", "args": {"order_id": 1}, "after": ["c"]},
                {"id": "b", "tool": "get_order", "args": {"order_id": 1}, "after": ["a"]},
                {"id": "c", "tool": "get_order", "args": {"order_id": 1}, "after": ["b"]},
            ),
            DEPENDENCY_CYCLE,
            "cycle",
        ),
    ],
)
def test_invalid_plans_are_named(bad: Plan, kind: str, mentions: str) -> None:
    with pytest.raises(PlanValidationError) as error:
        validate_plan(bad, TOOLS)
    assert error.value.kind == kind
    assert mentions in error.value.message


def test_topological_order_and_critical_path() -> None:
    p = plan(
        {"id": "kb", "tool": "search_kb", "args": {"query": "x"}},
        {"id": "o", "tool": "get_order", "args": {"order_id": 1}},
        {"id": "t", "tool": "track_shipment", "args": {"tracking_number": "$o.tracking_number"}},
        {
            "id": "i",
            "tool": "check_inventory",
            "for_each": "$o.items",
            "args": {"sku": "$item.sku"},
        },
    )
    deps = validate_plan(p, TOOLS)
    assert deps == {"kb": [], "o": [], "t": ["o"], "i": ["o"]}
    assert topological_order(p, deps) == ["kb", "o", "t", "i"]
    assert critical_path_ms(p, deps, TOOLS) == {"kb": 20, "o": 80, "t": 60, "i": 20}


def test_resolve_nested_and_item_references() -> None:
    outputs = {"o": {"items": [{"sku": "A"}, {"sku": "B"}], "id": 7}}
    assert resolve({"x": ["$o.id", {"y": "$o.items.1.sku"}]}, outputs) == {"x": [7, {"y": "B"}]}
    assert resolve("$item.sku", outputs, item={"sku": "Z"}) == "Z"
    with pytest.raises(ResolutionError):
        resolve("$o.items.5.sku", outputs)


def test_caps_below_one_are_rejected() -> None:
    with pytest.raises(ValueError):
        SchedulerLimits(max_concurrency=0)
    with pytest.raises(ValueError):
        SchedulerLimits(per_tool={"search_kb": 0})


def test_idempotency_key_names_the_run_chain_and_the_call() -> None:
    from agentkeel.workflows.dag.run_context import idempotency_key

    run = "01a22b65-4f7d-70c5-a9b8-f91985fd56f4"
    assert idempotency_key(run, "s3[2]") == f"{run}/s3[2]"
    assert len(idempotency_key(run, "s" * 32 + "[999]")) <= 200


def test_dollar_strings_are_literals_not_references() -> None:
    p = plan({"id": "a", "tool": "search_kb", "args": {"query": "$20 restocking fee?"}})
    assert validate_plan(p, TOOLS) == {"a": []}
