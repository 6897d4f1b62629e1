"""What a run shows while it runs: stage, decisions (memo + search attributes), layer timings."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import CacheStatus, Timings
from agentkeel.schemas.route import Route
from agentkeel.schemas.search_attributes import (
    AGENT_CACHE,
    AGENT_INTENT,
    AGENT_QUESTION,
    AGENT_TENANT,
    AGENT_TIER,
    shown_question,
)
from agentkeel.workflows.release import since
from agentkeel.workflows.state import AgentState

QUESTION_ATTRIBUTE_PATCH = "question-attribute-v1"
"""The run's question as the `AgentQuestion` search attribute, set with its tenant at its
start (a change after `RELEASE_PATCH`: its own marker)."""


def start_attributes(request: AgentRequest) -> list[SearchAttributeUpdate[Any]]:
    """The search attributes a run sets at its start: its tenant, and (on this code) the
    beginning of its question, so the Web UI's run list can say what each run was asked."""
    updates: list[SearchAttributeUpdate[Any]] = [AGENT_TENANT.value_set(request.tenant)]
    if since(QUESTION_ATTRIBUTE_PATCH):
        updates.append(AGENT_QUESTION.value_set(shown_question(request.question)))
    return updates


def stage(state: AgentState, text: str) -> None:
    """Tell ops what the run is doing: the UI's current details and the `progress` query."""
    workflow.set_current_details(text)
    state["progress"].stage = text


def publish_cache(status: CacheStatus) -> None:
    workflow.upsert_memo({"cache": status.value})
    workflow.upsert_search_attributes([AGENT_CACHE.value_set(status.value)])


def publish_route(state: AgentState, route: Route) -> None:
    """The run's route in the `progress` query, on the run's page and filterable in the
    Web UI (`AgentIntent = "refund"`). The page shows a confidence only where one was
    measured (the router's logprobs); else it says where the decision came from."""
    state["progress"].route = route
    workflow.upsert_memo(
        {
            "intent": route.intent,
            "tier": route.tier.value,
            "confidence": route.measured_confidence,
            "confidence_basis": route.basis.value if route.basis else None,
        }
    )
    workflow.upsert_search_attributes(
        [AGENT_INTENT.value_set(route.intent), AGENT_TIER.value_set(route.tier.value)]
    )


def elapsed_ms(since: datetime) -> float:
    return (workflow.now() - since).total_seconds() * 1000


def add_timing(state: AgentState, layer: str, since: datetime) -> Timings:
    """The state's timings with `layer` grown by the workflow time since `since`."""
    timings = state.get("timings", Timings()).model_copy()
    setattr(timings, layer, getattr(timings, layer) + elapsed_ms(since))
    return timings
