"""The plan shapes the DAG benchmark runs, each valid against the real tool catalog.

Wide shapes use `search_kb`, which has no per-tool cap, so they measure the
scheduler's parallelism rather than a tool's cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.tools import TOOLS


@dataclass(frozen=True)
class Shape:
    """A named plan and the static facts the benchmark derives from it."""

    name: str
    plan: Plan

    @cached_property
    def deps(self) -> dict[str, list[str]]:
        """Each step's dependencies; raises if the plan does not validate."""
        return validate_plan(self.plan, TOOLS)

    @cached_property
    def critical_path_steps(self) -> int:
        """Steps on the longest dependency chain: the physical limit is this x latency."""
        depth: dict[str, int] = {}
        for step in self.plan.steps:  # plan order is topological for every shape here
            depth[step.id] = 1 + max((depth[d] for d in self.deps[step.id]), default=0)
        return max(depth.values())

    @property
    def steps(self) -> int:
        return len(self.plan.steps)


def _chain(length: int) -> Plan:
    steps: list[dict[str, object]] = [
        {"id": "s1", "tool": "search_kb", "args": {"query": "return policy"}}
    ]
    for i in range(2, length + 1):
        # `KbResult.query` echoes the query, so each step consumes its predecessor's output.
        steps.append({"id": f"s{i}", "tool": "search_kb", "args": {"query": f"$s{i - 1}.query"}})
    return Plan.model_validate({"steps": steps, "rationale": f"bench: chain of {length}"})


def _diamond() -> Plan:
    return Plan.model_validate(
        {
            "rationale": "bench: a -> (b, c) -> d",
            "steps": [
                {"id": "a", "tool": "get_order", "args": {"order_id": 1001}},
                {"id": "b", "tool": "check_inventory", "args": {"sku": "$a.items.0.sku"}},
                {
                    "id": "c",
                    "tool": "track_shipment",
                    "args": {"tracking_number": "$a.tracking_number"},
                },
                {
                    "id": "d",
                    "tool": "search_kb",
                    "args": {"query": "$b.product_name"},
                    "after": ["c"],
                },
            ],
        }
    )


def _wide(width: int) -> Plan:
    steps = [
        {"id": f"s{i}", "tool": "search_kb", "args": {"query": f"topic {i}"}}
        for i in range(1, width + 1)
    ]
    return Plan.model_validate({"steps": steps, "rationale": f"bench: {width} independent"})


SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("chain", _chain(4)),
        Shape("diamond", _diamond()),
        Shape("4-wide", _wide(4)),
        Shape("8-wide", _wide(8)),
    )
}


def question_for(shape: Shape, n: int) -> str:
    """A question that names its shape, as `BenchPlanPolicy` expects."""
    return f"bench {shape.name} #{n}"


def shape_named_in(question: str) -> Shape:
    """The shape whose name appears as a word of the question."""
    for word in question.split():
        if word in SHAPES:
            return SHAPES[word]
    raise ValueError(f"no plan shape named in {question!r} (known: {', '.join(SHAPES)})")
