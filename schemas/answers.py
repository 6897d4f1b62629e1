"""A run's answer, announced in Redis the moment it is decided (contract of workers and clients).

When a run's last step is done, its answer is fixed: everything it was made from is in the
run's history, and a replay computes the same one. What is left, the run record and the
path cache entry, is bookkeeping that takes the run's final workflow task a local activity
and two round trips to the server. The `store` activity therefore announces the answer
first (one Redis Stream entry per run, read by any number of callers, kept briefly), and
`AgentClient.ask` returns on whichever comes first: the announcement or the run's result.
The run still completes durably with the same answer; only a failure to write the record
itself (a warning the result then carries) is missing from the announced copy.
"""

from __future__ import annotations

ANSWER_STREAM_PREFIX = "agentkeel:answer:"
ANSWER_FIELD = "result"
"""The entry's field holding the `AgentResult` as JSON."""
ANSWER_TTL_S = 120
"""How long an announcement stays readable: a caller attaches within the run's life."""


def answer_key(workflow_id: str, run_id: str) -> str:
    """The Redis Stream a run's answer is announced on."""
    return f"{ANSWER_STREAM_PREFIX}{workflow_id}:{run_id}"
