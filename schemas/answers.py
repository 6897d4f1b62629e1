"""A run's answer, announced in Redis once recorded, before the run closes (contract of
workers and clients).

When a run's last step is done, its answer is fixed: everything it was made from is in the
run's history, and a replay computes the same one. The `store` local activity writes the
run record and the path cache entry, then announces the answer (one Redis Stream entry per
run, read by any number of callers, kept briefly); what is left, the local activity's
result reaching the workflow and the run's last workflow task, costs the caller two round
trips to the server and the worker. `AgentClient.ask` returns on whichever comes first: the
announcement or the run's result. The run completes durably with the same answer. One
race remains, named in `docs/contract.md`: a cancel that reaches the run in the few
milliseconds between the announcement and the run's close still ends it cancelled (its
record and cache entry hold the answer; a caller that took the announcement holds it too).
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
