"""The reads a question predicts, from the served domain's entity patterns.

An id or an email in the question ("order 1001", "ana@example.com") names what the first
reads of its plan will be, before any model has read it. The CPU worker predicts them
with the cache lookup, so the run can start them at its first moment, beside the router
and the planner (`workflows.speculation`); the inference worker predicts them for an
unsure route of a run that did not (runs recorded before early speculation).
"""

from __future__ import annotations

from agentkeel.schemas.speculation import PredictedCall, Reading, predicted_calls
from agentkeel.schemas.tools import TOOLS
from agentkeel.sdk.serving import active_domain


def reading_of(question: str) -> Reading:
    """The entities of a question, by the tool argument each fills (the domain's
    `entity_patterns`): what speculation starts reads from."""
    reading: Reading = {}
    for pattern in active_domain().entity_patterns:
        values = pattern.values(question)
        if values:
            reading.setdefault(pattern.argument, []).extend(values)
    return reading


def predicted_reads(question: str, *, limit: int) -> list[PredictedCall]:
    """The reads `question` predicts, at most `limit` (0: none, without reading it)."""
    if limit <= 0:
        return []
    return predicted_calls(reading_of(question), TOOLS, limit=limit)
