"""Plan quality: a labelled set of requests through each configured policy, scored.

    python -m bench.plans [--engines rules,llamacpp,vllm,settings] [--limit N] [--data FILE]

Each request is routed; a confident route's draft plan is its plan, else the policy plans
(a `replan` row: the policy plans again after its labelled step failed). The plan is
scored against the row's labels (`bench.plan_scoring`), then the policy answers from
tool outputs made up for the plan's steps (`bench.plan_outputs`) and the answer is
checked for grounding. One table per engine, with the rows written without looking at
the rules policy's templates (`blind`) apart from the others; the last line is one JSON
object keyed by engine (`n`, `valid`, `exact`, `tool_precision`, `tool_recall`,
`wrong_side_effects`, `grounded`, `p50_ms`; p50 of route + plan).

Engines: `rules` (the served domain's rules policy), `llamacpp` (llama.cpp's server with
Gemma 3 270M, started here), `vllm` (in-process vLLM on the CPU, the same model), and
`settings`: the policy the inference worker would build from `AGENTKEEL_*` (for example
`AGENTKEEL_LIGHT_URL` and `_MODEL` naming a GPU model), so the same command scores it.
The domain is the one `AGENTKEEL_DOMAIN` names; `--data` its labelled set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from agentkeel.inference.policy import Policy
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.result import StepError, StepOutcome, StepStatus
from agentkeel.sdk.serving import active_domain
from bench.plan_outputs import outcomes
from bench.plan_scoring import Row, Scored, grounded, load_rows, score_plan, summarize
from bench.plan_servers import llamacpp_policy, settings_policy, vllm_policy

DATA = Path(__file__).parent / "data" / "plans.jsonl"
EngineFactory = Callable[[argparse.Namespace], AbstractAsyncContextManager[Policy]]


@asynccontextmanager
async def rules_policy(args: argparse.Namespace) -> AsyncIterator[Policy]:
    make = active_domain().rules_policy
    if make is None:
        raise SystemExit(f"the domain {active_domain().name!r} has no rules policy")
    yield make(0.7)


ENGINES: dict[str, EngineFactory] = {
    "rules": rules_policy,
    "llamacpp": llamacpp_policy,
    "vllm": vllm_policy,
    "settings": settings_policy,
}


async def score_row(policy: Policy, row: Row) -> Scored:
    started = time.perf_counter()
    routed = await policy.route(calls.RouteInput(question=row.question))
    if row.replan is not None:
        failed = row.replan["failed"]
        step = StepOutcome(
            id="s1",
            tool=failed["tool"],
            args=failed.get("args", {}),
            status=StepStatus.FAILED,
            error=StepError(**failed["error"]),
        )
        planned = await policy.plan(
            calls.PlanInput(
                question=row.question, route=routed.route, attempt=1, previous_steps=[step]
            )
        )
        plan, error = planned.plan, planned.error is not None
    elif routed.confident and routed.draft_plan is not None:
        plan, error = routed.draft_plan, False
    else:
        planned = await policy.plan(calls.PlanInput(question=row.question, route=routed.route))
        plan, error = planned.plan, planned.error is not None
    scored = score_plan(row, plan, error, (time.perf_counter() - started) * 1000)
    steps = outcomes(plan, row.outputs) if scored.valid and plan.steps else None
    if steps is not None:
        answer = await policy.respond(
            calls.RespondInput(question=row.question, route=routed.route, steps=steps)
        )
        scored.grounded = grounded(answer.answer, row.question, [s.output for s in steps])
    return scored


def table(engine: str, scored: Sequence[Scored]) -> None:
    print(f"\n{engine}")
    print(
        f"  {'rows':<10}{'n':>4}{'valid':>7}{'exact':>7}{'prec':>7}{'recall':>7}"
        f"{'wrongfx':>8}{'ground':>8}{'p50 ms':>9}  exact by kind"
    )
    for label, part in (
        ("all", scored),
        ("blind", [s for s in scored if s.row.blind]),
        ("seen", [s for s in scored if not s.row.blind]),
    ):
        if not part:
            continue
        s = summarize(part)
        ground = "-" if s.grounded is None else f"{s.grounded:.2f}"
        kinds = " ".join(f"{k}={v:.2f}" for k, v in s.by_kind.items())
        print(
            f"  {label:<10}{s.n:>4}{s.valid:>7.2f}{s.exact:>7.2f}{s.tool_precision:>7.2f}"
            f"{s.tool_recall:>7.2f}{s.wrong_side_effects:>8}{ground:>8}{s.p50_ms:>9.1f}"
            f"  {kinds}"
        )


def sample(rows: list[Row], limit: int | None) -> list[Row]:
    """`limit` rows spread over the set (every kind, blind and seen), or all of them."""
    if not limit or limit >= len(rows):
        return rows
    step = len(rows) / limit
    return [rows[int(i * step)] for i in range(limit)]


async def run(args: argparse.Namespace) -> dict[str, dict[str, object]]:
    rows = load_rows(args.data)
    print(
        f"{len(rows)} labelled requests ({sum(r.blind for r in rows)} blind) from {args.data}; "
        f"domain {active_domain().name}"
    )
    figures: dict[str, dict[str, object]] = {}
    for engine in args.engines:
        chosen = rows if engine == "rules" else sample(rows, args.limit)
        async with ENGINES[engine](args) as policy:
            scored = []
            for number, row in enumerate(chosen, 1):
                scored.append(await score_row(policy, row))
                if engine != "rules":  # the slow engines: a long run shows how far it got
                    print(f"  {engine} {number}/{len(chosen)}: {scored[-1].brief()}", flush=True)
        table(engine, scored)
        figures[engine] = {
            **summarize(scored).figures(),
            "blind": summarize([s for s in scored if s.row.blind]).figures(),
        }
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--engines", default="rules,llamacpp,vllm", type=lambda s: [e for e in s.split(",") if e]
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="rows per model engine, spread over the set (rules: all)",
    )
    parser.add_argument("--api", default="auto", choices=("auto", "chat", "completions"))
    parser.add_argument("--model-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown:
        parser.error(f"unknown engines {unknown} (known: {', '.join(ENGINES)})")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    figures = asyncio.run(run(args))
    print(json.dumps(figures, separators=(",", ":")))


if __name__ == "__main__":
    main()
