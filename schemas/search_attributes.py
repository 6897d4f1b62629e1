"""Search attributes `AgentWorkflow` sets, so ops can filter runs in the Web UI.

Every worker that runs `AgentWorkflow` registers them at start
(`settings.namespace_setup.ensure_search_attributes`): upserting an unknown
attribute would fail the workflow task, so a worker that cannot register them
refuses to start rather than leave runs stuck.
"""

from __future__ import annotations

import json

from temporalio.common import SearchAttributeKey

AGENT_INTENT = SearchAttributeKey.for_keyword("AgentIntent")
AGENT_TIER = SearchAttributeKey.for_keyword("AgentTier")
AGENT_CACHE = SearchAttributeKey.for_keyword("AgentCache")
AGENT_AWAITING = SearchAttributeKey.for_keyword("AgentAwaiting")
"""What a run waits for (`approval`), while it waits; unset otherwise."""
AGENT_WAITING = SearchAttributeKey.for_bool("AgentWaiting")
"""True while a run waits on a timer or a watch (`progress.waiting` says what); unset
otherwise."""
AGENT_TENANT = SearchAttributeKey.for_keyword("AgentTenant")
"""The request's tenant, from the run's first workflow task: `AgentTenant = "acme"`."""
AGENT_QUESTION = SearchAttributeKey.for_text("AgentQuestion")
"""The request's question, its first `QUESTION_SHOWN` characters, from the run's first
workflow task: a column of the Web UI's run list (docs/operations.md), and searchable by
its words (`AgentQuestion = "refund"`)."""
QUESTION_SHOWN = 200
QUESTION_BYTES = 1024
"""The most the shown question may take as the JSON payload Temporal stores (its limit for
one value is 2 KiB; characters outside ASCII take up to 12 bytes escaped)."""


def shown_question(question: str) -> str:
    """The beginning of `question` for `AGENT_QUESTION`: at most `QUESTION_SHOWN`
    characters and `QUESTION_BYTES` bytes as stored, whatever characters it holds."""
    shown = question[:QUESTION_SHOWN]
    while len(json.dumps(shown)) > QUESTION_BYTES:
        shown = shown[: len(shown) * 3 // 4]
    return shown


ALL_KEYS = (
    AGENT_INTENT, AGENT_TIER, AGENT_CACHE, AGENT_AWAITING, AGENT_WAITING, AGENT_TENANT,
    AGENT_QUESTION,
)  # fmt: skip

TEMPORAL_SCHEDULED_BY_ID = SearchAttributeKey.for_keyword("TemporalScheduledById")
"""Set by Temporal on every run a Schedule starts (not one of ours: never registered)."""
