"""The `lookup_cache` node: a whole path from the cache, or a plan to reuse, or a miss."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from agentkeel.schemas import names
from agentkeel.schemas.cache_lookup import LookupCacheInput, LookupCacheResult
from agentkeel.schemas.result import CacheMatch, CacheStatus
from agentkeel.schemas.route import Tier
from agentkeel.schemas.tools import has_side_effect
from agentkeel.schemas.usage import RunUsage
from agentkeel.workflows import timeouts
from agentkeel.workflows.cancellation import ends_the_run
from agentkeel.workflows.nodes.ahead import speculate_at_once
from agentkeel.workflows.state import AgentState
from agentkeel.workflows.visibility import (
    add_timing,
    elapsed_ms,
    publish_cache,
    publish_route,
    stage,
)

POLICY_OFFER_PATCH = "policy-offer-v1"
"""A lookup that says its worker serves no policy step spares the run offering its first
step there to find out (one local activity less before the first tool starts). Asked at
the run's start (`RunContext.policy_offer`)."""


async def lookup_cache(state: AgentState) -> dict[str, Any]:
    request = state["request"]
    if not request.options.use_cache or request.options.refresh_cache:
        return {"cache": CacheStatus.BYPASS}
    stage(state, "looking up the path cache")
    started = workflow.now()
    try:
        # A local activity: the CPU worker that runs this workflow also owns the Redis
        # client, so the lookup skips a task-queue round trip (the hit path is ~ms).
        found: LookupCacheResult = await workflow.execute_local_activity(
            names.LOOKUP_CACHE,
            LookupCacheInput(
                question=request.question,
                tenant=request.tenant,
                conversation_id=request.conversation_id,
                audience=request.actor.audience,
            ),
            result_type=LookupCacheResult,
            start_to_close_timeout=timeouts.CACHE_TIMEOUT,
            retry_policy=timeouts.CACHE_RETRY,
        )
    except ActivityError as exc:
        if ends_the_run(exc, state["context"].authority):
            raise
        # The cache only accelerates: whatever went wrong, this run is a miss.
        workflow.logger.warning("cache lookup failed, continuing as a miss: %s", exc.cause)
        found = LookupCacheResult(available=False)
    _take_offer(state, found)
    warnings = list(state.get("warnings", []))
    if state["context"].authority and _has_side_effect(found):
        # Never cached by this code: whoever wrote it, a path that moves money is not replayed.
        workflow.logger.warning("cached path with a side effect ignored")
        warnings.append("a cached path with a side effect was ignored: treated as a miss")
        found = LookupCacheResult(available=found.available)
    update: dict[str, Any] = {"timings": add_timing(state, "cache", started), "cache": found.status}
    publish_cache(found.status)
    if not found.available:
        warnings.append("cache unavailable: treated as a miss")
    if warnings:
        update["warnings"] = warnings
    if found.matched_question is not None:
        update["cache_match"] = CacheMatch(
            question=found.matched_question, similarity=found.similarity
        )
    if found.status == CacheStatus.PLAN and found.plan is not None and found.route is not None:
        # Reuse the plan, run the tools fresh: route and planning are skipped.
        route = found.route.model_copy(update={"tier": Tier.CACHE})
        publish_route(state, route)
        return {**update, "route": route, "plan": found.plan, "confident": True}
    if found.hit is None:
        # Beside a policy step this worker serves (a local activity, holding the workflow
        # task), reads it runs itself start at once as local activities too.
        here = bool(found.policy_here) and found.tools_here
        speculate_at_once(state, found.speculate, local=here)
        return {**update, "cache": CacheStatus.MISS}
    timings = update["timings"]
    timings.total = elapsed_ms(state["started_at"])
    timings.ttft = timings.total  # a cached answer arrives whole
    info = workflow.info()
    cached_route = found.hit.route.model_copy(update={"tier": Tier.CACHE})
    publish_route(state, cached_route)
    hit = found.hit.model_copy(
        update={
            "cache": found.status,
            "cache_match": update.get("cache_match"),
            "timings_ms": timings,
            "route": cached_route,
            "workflow_id": info.workflow_id,
            "run_id": info.run_id,
            "warnings": [],
            "usage": RunUsage(cached=True),  # no model was called for it
        }
    )
    return {**update, "result": hit}


def _has_side_effect(found: LookupCacheResult) -> bool:
    plans = [found.plan, found.hit.plan if found.hit is not None else None]
    return any(has_side_effect(step.tool) for plan in plans if plan for step in plan.steps)


def _take_offer(state: AgentState, found: LookupCacheResult) -> None:
    """Where the lookup says the policy steps go to the inference pool, go there from the
    first step (`call_model` offers a step to the CPU worker only while that is unknown).
    A worker that serves them is still offered each step: the offer is the step itself."""
    context = state["context"]
    if found.policy_here is False and context.local_policy is None and context.policy_offer:
        context.local_policy = False
        context.local_tools = found.tools_here
