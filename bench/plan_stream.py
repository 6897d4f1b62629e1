"""When the first tool starts, with the plan streamed into the DAG and without.

    python -m bench.plan_stream [--runs 5] [--speeds fast slow] [--route-confidence 0.95]

agentkeel's real LLM policy (light and heavy tiers on its OpenAI-compatible engine, its
prompts, plan schema and parsing) against the token-timed model server
(`bench.token_server`, the ideal model of `bench.ideal_model`), on the real stack with
100 ms stand-in tools. Two stacks side by side, one whose inference worker streams plans
(`AGENTKEEL_PLAN_STREAM=on`) and one that does not (`off`), take turns run by run, over
the bench shapes (`bench.peer_cases`' cold questions), at each model speed. Each question
names its shape and nothing a reading could predict, so no read starts before the planner
writes it.

For each speed and mode it prints the medians of when the first tool started (from the
client's start call) and of the run end to end, with their spread (min-max), and the
on/off ratio; its last line is one JSON object `{speed: {"on"|"off": {"first_tool_ms",
"end_to_end_ms"}}}`. Needs the local Postgres and Redis, as `bench.dag` does.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import time
import uuid
from contextlib import AsyncExitStack
from typing import Any

from pydantic import BaseModel

from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.settings.model import Settings
from agentkeel.workers.policy_assembly import build_policy
from agentkeel.workflows.agent import AgentWorkflow
from bench.fakes import StandInTools
from bench.ideal_model import IdealShapeModel
from bench.peer_cases import BATCHES, RUNS_PER_BATCH, SHAPE_NAMES, Case, batch_name
from bench.stack import BenchStack, StackConfig, bench_stack
from bench.token_server import SPEEDS, serving

TOOL_S = 0.1
MODES = ("on", "off")


class TimedTools(StandInTools):
    """Stand-ins that note when each call starts (one run at a time, so the first call
    after a run's start is that run's first tool)."""

    def __init__(self) -> None:
        super().__init__(TOOL_S)
        self.starts: list[float] = []

    async def _call(self, tool: str, args: BaseModel) -> Any:
        self.starts.append(time.perf_counter())
        return await super()._call(tool, args)


_asked = itertools.count()


def _question(shape: str) -> str:
    """A cold bench question of its own (`bench.peer_cases`): it names nothing, so its first
    reads are searches only the planner can write, and no run's answer serves another."""
    n = next(_asked)
    return Case(
        shape, n % RUNS_PER_BATCH, named=False, batch=batch_name(_BATCH + n // RUNS_PER_BATCH)
    ).question


_BATCH = random.randrange(BATCHES)


async def _one(stack: BenchStack, tools: TimedTools, shape: str) -> tuple[float, float]:
    """(first tool start, end to end) of one run, in ms from the client's start call."""
    # The path cache off: it would serve a plan it stored for the same reading, no model.
    request = AgentRequest(question=_question(shape), options=RunOptions(use_cache=False))
    tools.starts.clear()
    started = time.perf_counter()
    await stack.client.execute_workflow(
        AgentWorkflow.run,
        request,
        id=f"stream-{uuid.uuid4().hex[:12]}",
        task_queue=stack.task_queue,
    )
    ended = time.perf_counter()
    if not tools.starts:
        raise RuntimeError(f"no tool ran for {shape!r}: the model's plan did not reach the DAG")
    return (min(tools.starts) - started) * 1000, (ended - started) * 1000


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


async def _speed(
    stacks: dict[str, tuple[BenchStack, TimedTools]], shapes: list[str], runs: int
) -> dict[str, dict[str, list[float]]]:
    """Per mode, the first-tool and end-to-end times of every run, modes taking turns."""
    times: dict[str, dict[str, list[float]]] = {m: {"first": [], "total": []} for m in MODES}
    for i in range(runs):
        for shape in shapes:
            order = MODES if i % 2 == 0 else MODES[::-1]  # neither mode always goes first
            for mode in order:
                first, total = await _one(*stacks[mode], shape)
                times[mode]["first"].append(first)
                times[mode]["total"].append(total)
    return times


async def amain(args: argparse.Namespace, config: StackConfig) -> None:
    model = IdealShapeModel(route_confidence=args.route_confidence)
    summary: dict[str, dict[str, dict[str, float]]] = {}
    async with serving(model, SPEEDS["instant"]) as (url, server), AsyncExitStack() as exits:
        tier = {"url": url, "model": "ideal", "api": "chat"}
        stacks: dict[str, tuple[BenchStack, TimedTools]] = {}
        for mode in MODES:
            assembly = build_policy(Settings(light=tier, heavy=tier))
            await assembly.start()
            exits.push_async_callback(assembly.close)
            tools = TimedTools()
            stack = await exits.enter_async_context(
                bench_stack(config, policy=assembly.policy, stand_ins=tools.all(), plan_stream=mode)
            )
            stacks[mode] = (stack, tools)
        for shape in args.shapes:  # warm-up: connections, caches of compiled schemas
            for mode in MODES:
                await _one(*stacks[mode], shape)
        print(
            f"real LLM policy via the token server, route confidence {args.route_confidence}, "
            f"tools {TOOL_S * 1000:.0f} ms, shapes {', '.join(args.shapes)}, "
            f"{args.runs} runs a shape and mode; medians (min-max) in ms"
        )
        print(f"{'speed':<6} {'stream':<7} {'first tool starts':>20} {'end to end':>20}")
        for speed in args.speeds:
            server.speed = SPEEDS[speed]
            times = await _speed(stacks, args.shapes, args.runs)
            summary[speed] = {}
            for mode in MODES:
                first, total = times[mode]["first"], times[mode]["total"]
                print(f"{speed:<6} {mode:<7} {_spread(first):>20} {_spread(total):>20}")
                summary[speed][mode] = {
                    "first_tool_ms": round(statistics.median(first)),
                    "end_to_end_ms": round(statistics.median(total)),
                }
            on, off = summary[speed]["on"], summary[speed]["off"]
            print(
                f"{speed:<6} on/off  {on['first_tool_ms'] / off['first_tool_ms']:>20.2f} "
                f"{on['end_to_end_ms'] / off['end_to_end_ms']:>20.2f}"
            )
    print(json.dumps(summary))


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.plan_stream", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per shape, speed and mode")
    parser.add_argument("--speeds", nargs="+", choices=["fast", "slow"], default=["fast", "slow"])
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPE_NAMES), default=list(SHAPE_NAMES))
    parser.add_argument(
        "--route-confidence",
        type=float,
        default=0.95,
        help="the ideal router's certainty (below 0.7 the heavy tier plans after it)",
    )
    args = parser.parse_args()
    asyncio.run(amain(args, StackConfig.from_env()))


if __name__ == "__main__":
    main()
