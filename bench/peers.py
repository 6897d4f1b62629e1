"""agentkeel beside the durable agents on Temporal, each at its documented best, one model server.

    python -m bench.peers [--speeds instant,fast,slow] [--shapes chain,diamond,4-wide,8-wide]
                          [--rows warm,cold,replan] [--tools local,queue] [--rounds 5]
                          [--invocations 3] [--warmup 1] [--tool-ms 100]
                          [--models pool,here] [--model-server apart|here] [--quick]

Needs the `bench` extra (`pip install -e '.[bench]'`), the local Postgres and Redis (as
`bench.dag`: `AGENTKEEL_BENCH_ADMIN_DSN`, `AGENTKEEL_REDIS_URL`).

Every system reaches the same token-timed OpenAI-compatible server (`bench.token_server`:
time to first token plus output tokens x a per-token time, streamed token by token; in a
process of its own, as a model server is deployed, `bench.token_apart`) through its own
real model client, and the server answers each request as an ideal model would in
that system's own format (`bench.ideal_model`): tool calls for the tool-calling frameworks
(every ready call at once, the answer with the last round where the framework offers an
answer tool), a plan document for agentkeel's planner. Speeds: `instant` (0 ms: what the
orchestration itself costs), `fast` (50 ms to the first token, 5 ms a token: a small model
on a GPU), `slow` (300 ms, 30 ms a token: a 70B-class model).

* agentkeel      — `AgentClient.ask` on the bench stack serving `bench.peer_domain` (its
  tools as `agentkeel.tool` functions) with its real LLM policy (`bench.peer_agentkeel`),
  its model steps on its inference pool or on its CPU worker (`--models`, a row each).
* openai-agents  — Temporal's OpenAI Agents integration (`bench.peer_openai_agents`).
* pydantic-ai    — Pydantic AI's Temporal durability (`bench.peer_pydantic_ai`).
* bare           — plain Temporal: one plan request, the tools as activities (`bench.peer_bare`).

Tools sleep 100 ms (`--tool-ms`), and every system's tools run the same body
(`bench.peer_fakes`). Each system runs its tools as local activities and through the task
queue where it can (one row each). Every worker runs its activations inline and
unsandboxed. Rows: **warm** (the question names the orders its first reads need; agentkeel's
plan-ahead forecast is primed), **cold** (the question names nothing; agentkeel's
tenant is new to the forecast) and **replan** (a warm question the model first misreads:
its first lookup fails, and each system hands the failure back to its model its own way,
which then writes the calls again: `bench.peer_cases`' wrong-once questions). Every run
asks a question of its own and is checked to have made exactly its tool calls (the
misread one included). The order of the variants rotates every round; each invocation
uses a batch of questions of its own. The last line is one JSON object: speed -> shape ->
system -> the warm median end to end in ms, each system at its best configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import time
import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from bench import peer_fakes
from bench.ideal_model import IdealShapeModel
from bench.peer_agentkeel import AgentkeelPeer
from bench.peer_cases import SHAPE_NAMES, Case, batch_name
from bench.peer_report import Results, history_stats, print_table, print_verdict, summary
from bench.peer_stack import Variant, peer_stack
from bench.stack import StackConfig
from bench.token_apart import served_apart
from bench.token_server import SPEEDS, Speed, serving

ROWS = ("warm", "cold", "replan")
UNSURE = 0.5
"""The ideal router's certainty: below agentkeel's threshold (0.7), so its heavy tier plans."""


def row_of(case: Case) -> str:
    """The table row a case's run counts in."""
    if case.wrong_once:
        return "replan"
    return "warm" if case.named else "cold"


async def run_once(variant: Variant, case: Case) -> tuple[float, str, Any]:
    """One run, end to end as the client sees it, checked for its calls: ms, id, result."""
    workflow_id = f"peers-{variant.label.split(' ')[0]}-{case.shape}-{uuid.uuid4().hex[:10]}"
    start = time.perf_counter()
    result = await variant.run(case, workflow_id)
    e2e = (time.perf_counter() - start) * 1000
    if variant.settle is not None:
        await variant.settle(workflow_id)
    peer_fakes.check_calls(case.question, workflow_id)
    return e2e, workflow_id, result


class ModelServer(Protocol):
    """The token server's controls, in this process or in its own (`bench.token_apart`)."""

    async def requests(self) -> int: ...

    async def set_speed(self, speed: Speed) -> None: ...


@dataclass
class Measure:
    variants: list[Variant]
    server: ModelServer
    agentkeel: AgentkeelPeer
    results: Results

    async def cell_run(
        self, speed: str, case: Case, variant: Variant, invocation: int, measured: bool
    ) -> None:
        cell = self.results.cell(speed, row_of(case), case.shape, variant.label)
        counted = measured and cell.history is None  # one run's requests and history a cell
        requests = await self.server.requests() if counted else 0
        e2e, workflow_id, result = await run_once(variant, case)
        if not measured:
            return
        cell.add(invocation, e2e)
        first = await self.agentkeel.first_tool_ms(workflow_id, result)
        if first is not None:
            cell.first_tool_ms.append(first)
        if counted:
            handle = self.agentkeel.stack.client.get_workflow_handle(workflow_id)
            cell.history = await history_stats(handle)
            cell.model_requests = await self.server.requests() - requests

    async def invocation(
        self, speed: str, number: int, shapes: list[str], rows: list[str], rounds: int, warmup: int
    ) -> None:
        batch = batch_name(random.randrange(26 * 26))
        n = 0
        for round_ in range(warmup + rounds):
            for shape in shapes:
                for row in rows:
                    shift = (round_ + number + n) % len(self.variants)
                    for variant in self.variants[shift:] + self.variants[:shift]:
                        n += 1  # a question of its own: no cache answers another's
                        case = Case(shape, n, row != "cold", batch, wrong_once=row == "replan")
                        await self.cell_run(speed, case, variant, number, round_ >= warmup)
            kind = "warm-up" if round_ < warmup else "round"
            print(f"  {speed}: invocation {number + 1} {kind} {round_ + 1} done", flush=True)


async def amain(args: argparse.Namespace) -> None:
    peer_fakes.KNOBS.tool_s = args.tool_ms / 1000
    # The replan rows' misread lookups fail on purpose: no traceback for each (a run that
    # went wrong fails its call check and stops the bench).
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)
    print(
        f"agentkeel beside its peers: tools of {args.tool_ms} ms; speeds {', '.join(args.speeds)}; "
        f"rows {', '.join(args.rows)}; {args.invocations} invocations of {args.rounds} rounds "
        f"(+{args.warmup} warm-up), variants rotated every round.\n"
        "  e2e = client start -> result; history and model requests counted from one run per "
        "cell;\n  1st tool = agentkeel's first tool start after the run's start (ms)",
        flush=True,
    )
    async with _model_server(args.model_server) as (url, server):
        forms = tuple(args.tools)
        config = StackConfig.from_env()
        models = tuple(args.models)
        async with peer_stack(config, url, tool_forms=forms, model_forms=models) as (
            variants,
            agentkeel,
        ):
            measure = Measure(variants, server, agentkeel, Results())
            for speed in args.speeds:
                await server.set_speed(SPEEDS[speed])
                for number in range(args.invocations):
                    await measure.invocation(
                        speed, number, args.shapes, args.rows, args.rounds, args.warmup
                    )
    labels = [v.label for v in variants]
    for speed in args.speeds:
        for row in args.rows:
            print_table(measure.results, speed, row, args.shapes, labels)
    print_verdict(measure.results, args.speeds, args.rows, args.shapes, labels)
    row = "warm" if "warm" in args.rows else args.rows[0]
    print(json.dumps(summary(measure.results, args.speeds, args.shapes, labels, row)))


def _model_server(where: str) -> AbstractAsyncContextManager[tuple[str, ModelServer]]:
    """The token server in a process of its own (`apart`, as model servers are deployed)
    or in this one (`here`)."""
    if where == "apart":
        return served_apart(SPEEDS["instant"], route_confidence=UNSURE)
    return serving(IdealShapeModel(route_confidence=UNSURE), SPEEDS["instant"])


def _csv(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--speeds", type=_csv, default=["instant", "fast", "slow"])
    parser.add_argument("--shapes", type=_csv, default=list(SHAPE_NAMES), help="comma-separated")
    parser.add_argument("--rows", type=_csv, default=list(ROWS), help="warm,cold,replan")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per invocation")
    parser.add_argument("--invocations", type=int, default=3, help="batches, each its own median")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured rounds per invocation")
    parser.add_argument("--tool-ms", type=int, default=100, help="sleep of every tool call")
    parser.add_argument(
        "--tools", type=_csv, default=["local", "queue"], help="tool forms: local,queue"
    )
    parser.add_argument(
        "--models",
        type=_csv,
        default=["pool", "here"],
        help="where agentkeel's model steps run: pool (its inference pool), here (its CPU "
        "worker, AGENTKEEL_LOCAL_POLICY=on)",
    )
    parser.add_argument(
        "--model-server",
        choices=["apart", "here"],
        default="apart",
        help="the token server in a process of its own (as deployed) or in this one",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a fast check: fast speed, diamond, 1 round, 1 invocation",
    )
    args = parser.parse_args()
    if args.quick:
        args.speeds, args.shapes, args.rounds, args.invocations = ["fast"], ["diamond"], 1, 1
    unknown = (set(args.shapes) - set(SHAPE_NAMES)) | (set(args.speeds) - set(SPEEDS))
    unknown |= (set(args.rows) - set(ROWS)) | (set(args.tools) - {"local", "queue"})
    unknown |= set(args.models) - {"pool", "here"}
    if unknown or args.rounds < 1 or args.invocations < 1 or args.warmup < 0:
        parser.error(
            f"--shapes from {', '.join(SHAPE_NAMES)}, --speeds from {', '.join(SPEEDS)}, --rows "
            f"from {', '.join(ROWS)}, --tools from local, queue, --models from pool, here "
            f"(unknown: {', '.join(sorted(unknown)) or 'none'}); --rounds and --invocations "
            ">= 1, --warmup >= 0"
        )
    try:
        asyncio.run(amain(args))
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
