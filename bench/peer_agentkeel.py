"""agentkeel in `bench.peers`: `AgentWorkflow` on the bench stack, with the same fakes as
the peers.

The policy is `bench.fakes.BenchPlanPolicy` (route unsure, plan the named shape with its
answer), with every model call (route, plan, join, respond) sleeping the current model
time of `bench.peer_fakes.KNOBS`, as each peer's fake model does per call. The workers
run with agentkeel's defaults: the planner beside the router once routes have been
unsure (`AGENTKEEL_PLAN_AHEAD=auto`), fast reads as local activities. The tools are the
stand-ins of `bench.fakes`, logged per workflow like the peers' tools.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from agentkeel.inference.policy import TokenSink
from agentkeel.schemas import model_calls as calls
from bench import peer_fakes as fakes
from bench.fakes import BenchPlanPolicy, StandInTools, stand_in_result


class PeerBenchPolicy(BenchPlanPolicy):
    """`BenchPlanPolicy` whose every call costs the model time set for the round, and
    whose plans carry their answer: the best rounds agentkeel allows, as each peer's fake
    model emits the best rounds its framework allows."""

    def __init__(self) -> None:
        super().__init__(write_answer=True)

    async def _decode(self) -> None:
        await fakes.model_turn()

    async def join(self, request: calls.JoinInput) -> calls.JoinResult:
        await self._decode()
        return await super().join(request)

    async def respond(
        self, request: calls.RespondInput, sink: TokenSink | None = None
    ) -> calls.RespondResult:
        await self._decode()
        return await super().respond(request, sink)


class LoggedStandIns(StandInTools):
    """The stand-in tools, sleeping the knobs' tool time and logging each call."""

    def __init__(self) -> None:
        super().__init__(fakes.KNOBS.tool_s)

    async def _call(self, tool: str, args: BaseModel) -> Any:
        self.calls += 1
        dumped = args.model_dump()
        fakes.TOOL_LOG.record(tool, dumped)
        await asyncio.sleep(fakes.KNOBS.tool_s)
        return stand_in_result(tool, dumped)
