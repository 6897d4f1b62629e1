"""Start-to-close timeouts and retry policies of the agent's own activities, in one place."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

from agentkeel.schemas.errors import MODEL_ERRORS_NOT_RETRIED

CACHE_TIMEOUT = timedelta(seconds=2)
ROUTE_TIMEOUT = timedelta(seconds=60)
"""A confident route includes the light model's draft plan: as long as a plan may take."""
PLAN_TIMEOUT = timedelta(seconds=60)
JOIN_TIMEOUT = timedelta(seconds=30)
RESPOND_TIMEOUT = timedelta(seconds=120)
STORE_TIMEOUT = timedelta(seconds=10)
TOOL_HEARTBEAT = timedelta(seconds=5)
"""A tool call running longer than a second heartbeats every second (`activities.heartbeat`):
a killed worker's calls are retried elsewhere after this long, not their start-to-close
(a side effect's transaction heartbeats every half second). Room for a stalled event loop
of a few seconds before an attempt is taken for lost."""
MODEL_HEARTBEAT = timedelta(seconds=10)
"""Model activities heartbeat every second: a dead inference worker is noticed in this
long, not after the whole start-to-close timeout, and the activity retried elsewhere."""

# A cache lookup is an accelerator: one quick retry, then the run goes on as a miss.
CACHE_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(milliseconds=50))
MODEL_RETRY = RetryPolicy(
    maximum_attempts=3,
    initial_interval=timedelta(milliseconds=200),
    # Raised by the inference activities for what a greedy retry would only repeat.
    non_retryable_error_types=list(MODEL_ERRORS_NOT_RETRIED),
)
STORE_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=10)
