"""How the client names and labels the runs it starts: workflow ids and Web UI summaries.

Identical requests in flight at the same moment share one run: the coalesced id is
derived from everything that changes the answer, and Temporal's conflict policy attaches
a second caller to the first run.
"""

from __future__ import annotations

import hashlib
import uuid

from agentkeel.schemas.cache_lookup import normalize_question
from agentkeel.schemas.request import AgentRequest

SUMMARY_CHARS = 80


def new_workflow_id(prefix: str = "ask") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def coalesced_workflow_id(request: AgentRequest, version: str) -> str:
    """Equal for requests that must give the same answer, different otherwise."""
    identity = "\x1f".join(
        (
            version,
            request.tenant,
            normalize_question(request.question),
            request.conversation_id or "",
            request.options.model_dump_json(),
            # Two actors never share a run (they may see different rows); one request id
            # shares it, whatever else is equal.
            request.actor.model_dump_json(),
            request.request_id or "",
            # Two plans a caller brings are two automations, whatever their question says.
            request.plan.model_dump_json() if request.plan is not None else "",
        )
    )
    return "agent-" + hashlib.sha256(identity.encode()).hexdigest()[:32]


def ui_summary(request: AgentRequest) -> tuple[str, str]:
    """What the Web UI lists for a run (the question, shortened) and shows on its page
    (tenant, actor, conversation): readable runs instead of opaque ids. Set at start, so
    they are in the run's first event and visible before it does anything."""
    question = " ".join(request.question.split())
    if len(question) > SUMMARY_CHARS:
        question = question[: SUMMARY_CHARS - 1] + "…"
    actor = request.actor
    who = actor.role + (f" {actor.name}" if actor.name else "")
    if actor.subject is not None:
        who += f" (subject {actor.subject})"
    lines = [f"**tenant** {request.tenant}", f"**actor** {who}"]
    if request.conversation_id:
        lines.append(f"**conversation** {request.conversation_id}")
    if request.request_id:
        lines.append(f"**request** {request.request_id}")
    return question, "  \n".join(lines)
