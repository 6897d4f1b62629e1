"""Names that appear in every run's history: workflow, activity and query types.

Defined once and used at both ends (the workflow that calls, the worker that registers):
renaming one breaks every run in flight, so each change here needs a `workflow.patched()`
gate. A tool's activity name is its catalog name (`schemas.tools`).
"""

from __future__ import annotations

from typing import Final

# Workflows.
AGENT_WORKFLOW: Final = "AgentWorkflow"
CACHE_WARMER_WORKFLOW: Final = "CacheWarmerWorkflow"
FAN_OUT_WORKFLOW: Final = "AgentFanOut"
"""A child of `AgentWorkflow` that runs part of a large `for_each` step in its own history."""

# Queries and updates.
PROGRESS_QUERY: Final = "progress"
APPROVE_UPDATE: Final = "approve"
SLOT_WAIT_SIGNAL: Final = "slot_wait"
"""A tool call waits for (or got) a slot of its downstream: the run shows it."""
TOOL_PROGRESS_SIGNAL: Final = "tool_progress"
"""A tool call reports how far it is (an MCP progress notification): the step shows it."""
PLAN_STEP_SIGNAL: Final = "plan_step"
"""The planner has written a complete step that is a read with its inputs ready: the run
may start it before the plan is whole (`workflows.plan_stream`)."""
OVERFLOW_SLOT_SIGNAL: Final = "overflow_slot"
"""Wakes an overflow run waiting for its slot to look again (`workflows.overflow_gate`)."""

# Activities of the CPU worker (besides the tools).
LOOKUP_CACHE: Final = "lookup_cache"
STORE: Final = "store"
HOT_QUESTIONS: Final = "hot_questions"
APPROVAL_POLICY: Final = "approval_policy"
ANNOUNCE_CANCELLATION: Final = "announce_cancellation"
STORE_OUTPUT: Final = "store_output"
LOAD_OUTPUTS: Final = "load_outputs"
COMBINE_OUTPUTS: Final = "combine_outputs"
LATENCY_ESTIMATES: Final = "latency_estimates"
CLAIM_EFFECT: Final = "claim_effect"
SETTLE_EFFECT: Final = "settle_effect"
RECORD_REFUSAL: Final = "record_refusal"
HOLD_WATCH_SLOT: Final = "hold_watch_slot"
TAKE_OVERFLOW_SLOT: Final = "take_overflow_slot"
GIVE_BACK_OVERFLOW_SLOT: Final = "give_back_overflow_slot"

# Activities of the inference worker pool.
ROUTE: Final = "route"
PLAN: Final = "plan"
JOIN: Final = "join"
RESPOND: Final = "respond"

# The same steps as local activities of the CPU worker, where its policy needs no model.
LOCAL_ROUTE: Final = "local_route"
LOCAL_PLAN: Final = "local_plan"
LOCAL_JOIN: Final = "local_join"
LOCAL_RESPOND: Final = "local_respond"
LOCAL_POLICY_STEPS: Final = {
    ROUTE: LOCAL_ROUTE,
    PLAN: LOCAL_PLAN,
    JOIN: LOCAL_JOIN,
    RESPOND: LOCAL_RESPOND,
}
