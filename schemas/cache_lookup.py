"""Input and result of the `lookup_cache` activity (a local activity of the CPU worker)."""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel, Field

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import AgentResult, CacheStatus
from agentkeel.schemas.route import Route
from agentkeel.schemas.speculation import PredictedCall


class LookupCacheInput(BaseModel):
    question: str
    tenant: str
    conversation_id: str | None = None
    semantic: bool = True
    """Also look for a guarded semantic match when the exact key misses."""
    audience: str = "all"
    """Whose runs may answer: the actor's audience (`schemas.actor.Actor.audience`)."""


class LookupCacheResult(BaseModel):
    status: CacheStatus = CacheStatus.MISS
    hit: AgentResult | None = None
    """The cached run, when its answer may be served (`exact` or `semantic`)."""
    plan: Plan | None = None
    route: Route | None = None
    """The cached plan and route, when only the plan may be reused (`plan`)."""
    similarity: float | None = None
    matched_question: str | None = None
    """For a semantic match: the stored question it matched, and how closely."""
    available: bool = True
    """False when the cache could not be reached; the lookup then counts as a miss."""
    speculate: list[PredictedCall] = Field(default_factory=list)
    """On a miss: the reads the question predicts (`activities.predictions`), which the
    run starts at once, beside the router and the planner."""
    policy_here: bool | None = None
    """Whether the worker that looked up serves the policy steps itself
    (`activities.local_policy`), so the run need not offer it its first step to find out
    (`policy-offer-v1`); None from a worker of a release that does not say."""
    tools_here: bool = False
    """That worker runs the tool activities too (with `policy_here`: see `tools_here` of
    `LocalPolicyResult`)."""


_SPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s?!.]+$")


def normalize_question(question: str) -> str:
    """Case, width, spacing and trailing punctuation do not change what is asked: the form
    of a question in every cache key and coalesced workflow id, on workers and clients."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return _TRAILING.sub("", _SPACE.sub(" ", text).strip())
