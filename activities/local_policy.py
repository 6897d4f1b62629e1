"""The policy steps a CPU worker serves itself, as local activities.

The rules policy decides in microseconds; sending it to the inference queue and back cost a
run 50-150 ms per step (two task-queue hops and a workflow task each). Where the deployment
names no model, the CPU worker hosts the same `InferenceActivities` over the rules policy,
and the workflow offers each policy step here first. Where it names a model, each answer is
"not here" (`result=None`) and the step goes to the inference pool as before, unless
`AGENTKEEL_LOCAL_POLICY=on`: then the same activities run the LLM policy here too, its
models reached over HTTP from this worker (`workers.policy_assembly.local_policy`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas import names


class LocalPolicyActivities:
    """`local` is None where the policy needs a model: then every step says "not here".
    `tools_here`: this worker also runs the tool activities, so the workflow may run its
    fast reads as local activities too (the answer is recorded with the first offer)."""

    def __init__(self, local: InferenceActivities | None, *, tools_here: bool = False) -> None:
        self._served = local
        self.tools_here = tools_here
        self.steps_here = local is not None
        """Whether it answers them now (a benchmark compares both ways on one worker; a
        run reads it at its first policy step, like `tools_here`)."""

    @property
    def serves_steps(self) -> bool:
        """Whether this worker answers the policy steps (else each says "not here")."""
        return self._served is not None and self.steps_here

    @property
    def _local(self) -> InferenceActivities | None:
        return self._served if self.steps_here else None

    @activity.defn(name=names.LOCAL_ROUTE)
    async def route(self, request: calls.RouteInput) -> calls.LocalPolicyResult[calls.RouteResult]:
        answer = await self._local.route(request) if self._local else None
        return calls.LocalPolicyResult[calls.RouteResult](result=answer, tools_here=self.tools_here)

    @activity.defn(name=names.LOCAL_PLAN)
    async def plan(self, request: calls.PlanInput) -> calls.LocalPolicyResult[calls.PlanResult]:
        answer = await self._local.plan(request) if self._local else None
        return calls.LocalPolicyResult[calls.PlanResult](result=answer, tools_here=self.tools_here)

    @activity.defn(name=names.LOCAL_JOIN)
    async def join(self, request: calls.JoinInput) -> calls.LocalPolicyResult[calls.JoinResult]:
        answer = await self._local.join(request) if self._local else None
        return calls.LocalPolicyResult[calls.JoinResult](result=answer, tools_here=self.tools_here)

    @activity.defn(name=names.LOCAL_RESPOND)
    async def respond(
        self, request: calls.RespondInput
    ) -> calls.LocalPolicyResult[calls.RespondResult]:
        answer = await self._local.respond(request) if self._local else None
        return calls.LocalPolicyResult[calls.RespondResult](
            result=answer, tools_here=self.tools_here
        )

    def all(self) -> list[Callable[..., Any]]:
        return [self.route, self.plan, self.join, self.respond]
