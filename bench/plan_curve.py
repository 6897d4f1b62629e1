"""The cascade's trade: heavy-model share against plan quality, threshold by threshold.

    python -m bench.plan_curve [--engine llamacpp|vllm|settings] [--limit N] [--data FILE]

Each labelled request (`bench/data/plans.jsonl`, replan rows aside) is routed once by the
light tier with its draft plan forced (threshold 0), and planned once by the heavy tier;
both plans are scored against the row's labels (`bench.plan_scoring`). Then, for each
router threshold, a request goes to the heavy tier when the light tier's confidence is
under it (or it wrote no usable draft), and the table prints the share of requests the
heavy tier plans beside the exact-plan share and tool recall the cascade would reach. The
threshold `agentkeel calibrate` picks from recorded runs is read off the same trade.

Engines: `llamacpp` and `vllm` (`bench.plan_servers`: the packaged Gemma 3 270M on the CPU,
light and heavy the same model, the heavy tier re-reading the intent as it does in
production), `settings` (the light and heavy tiers `AGENTKEEL_LIGHT_*` and
`AGENTKEEL_HEAVY_*` configure). The last line is one JSON object: threshold -> heavy share,
exact, tool recall.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.route import Tier
from bench.plan_scoring import Row, Scored, load_rows, score_plan, summarize
from bench.plan_servers import small_model_policy
from bench.plans import DATA, ENGINES, sample

THRESHOLDS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.01)
"""1.01: every request to the heavy tier (the heavy model alone)."""


@dataclass(frozen=True)
class Both:
    """One request as either tier would serve it."""

    confidence: float
    light: Scored | None
    """The light tier's draft plan scored; None where it wrote no usable draft."""
    heavy: Scored

    def served(self, threshold: float) -> tuple[bool, Scored]:
        """Whether the heavy tier plans at `threshold`, and the plan the run would run."""
        if self.light is None or self.confidence < threshold:
            return True, self.heavy
        return False, self.light


async def both_tiers(light: LlmPolicy, heavy: LlmPolicy, row: Row) -> Both:
    routed = await light.route(calls.RouteInput(question=row.question))
    draft = None
    if routed.confident and routed.draft_plan is not None:
        draft = score_plan(row, routed.draft_plan, False, 0.0)
    planned = await heavy.plan(calls.PlanInput(question=row.question, route=routed.route))
    scored = score_plan(row, planned.plan, planned.error is not None, 0.0)
    return Both(routed.route.confidence, draft, scored)


def curve(requests: Sequence[Both]) -> dict[str, dict[str, float]]:
    if not requests:
        return {}
    points = {}
    for threshold in THRESHOLDS:
        served = [r.served(threshold) for r in requests]
        figures = summarize([plan for _, plan in served])
        points[f"{threshold:.2f}"] = {
            "heavy_share": round(sum(heavy for heavy, _ in served) / len(served), 3),
            "exact": figures.exact,
            "tool_recall": figures.tool_recall,
        }
    return points


@asynccontextmanager
async def tiers(args: argparse.Namespace) -> AsyncIterator[tuple[LlmPolicy, LlmPolicy]]:
    """The light tier (its draft forced: threshold 0) and the heavy tier of `args.engine`."""
    async with ENGINES[args.engine](args) as policy:
        if isinstance(policy, CascadePolicy):
            light, heavy = policy.light, policy.heavy
        elif isinstance(policy, LlmPolicy):  # one model: the heavy tier is it re-reading
            light = policy
            heavy = small_model_policy(policy.engine, Tier.HEAVY)
        else:
            raise SystemExit(f"engine {args.engine}: no light and heavy model tiers to compare")
        if not isinstance(light, LlmPolicy) or not isinstance(heavy, LlmPolicy):
            raise SystemExit(f"engine {args.engine}: both tiers must be models")
        light.threshold = 0.0
        yield light, heavy


async def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    rows = sample([r for r in load_rows(args.data) if r.replan is None], args.limit)
    print(f"{len(rows)} labelled requests from {args.data}; engine {args.engine}", flush=True)
    requests = []
    async with tiers(args) as (light, heavy):
        for number, row in enumerate(rows, 1):
            requests.append(await both_tiers(light, heavy, row))
            r = requests[-1]
            draft = "none" if r.light is None else f"exact={r.light.exact}"
            print(
                f"  {number}/{len(rows)}: confidence {r.confidence:.2f}, light {draft}, "
                f"heavy exact={r.heavy.exact}",
                flush=True,
            )
    points = curve(requests)
    print(f"\n{'threshold':>9} {'heavy share':>11} {'exact':>7} {'tool recall':>11}")
    for threshold, p in points.items():
        print(
            f"{threshold:>9} {p['heavy_share']:>11.2f} {p['exact']:>7.2f} {p['tool_recall']:>11.2f}"
        )
    return points


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="llamacpp", choices=("llamacpp", "vllm", "settings"))
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None, help="rows, spread over the set")
    parser.add_argument("--api", default="auto", choices=("auto", "chat", "completions"))
    parser.add_argument("--model-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(json.dumps(asyncio.run(run(args)), separators=(",", ":")))


if __name__ == "__main__":
    main()
