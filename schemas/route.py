"""What the router (light model or rules) decided about a request."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class Tier(StrEnum):
    RULES = "rules"
    LIGHT = "light"
    HEAVY = "heavy"
    CACHE = "cache"
    CALLER = "caller"
    """The request brought its own plan (`AgentRequest.plan`)."""


class ConfidenceBasis(StrEnum):
    """Where a route's `confidence` comes from: only `logprobs` is a measured probability."""

    LOGPROBS = "logprobs"
    """The router model's own token probabilities (`inference.llm.confidence`)."""
    RULES = "rules"
    """A rule's fixed level (the rules or patterns policy): compared with the threshold
    like a probability, but nobody measured it."""
    UNMEASURED = "unmeasured"
    """The engine returned no logprobs: `confidence` is 0 and the declared rule
    `AGENTKEEL_UNMEASURED_ROUTE` decided whether the route stands."""
    GIVEN = "given"
    """No routing decision: the caller's plan, or a cached path."""


class Route(BaseModel):
    intent: str
    confidence: float = Field(ge=0.0, le=1.0)
    """A probability only when `basis` is `logprobs`; see `basis`."""
    basis: ConfidenceBasis | None = None
    """Where `confidence` comes from. None: a route recorded before it was said."""
    tier: Tier = Tier.RULES
    tools: list[str] = Field(default_factory=list)
    reason: str = ""
    """Why this tier decided as it did (the router's probability, an escalation, ...)."""
    router_intent: str | None = None
    """Set once a planner has re-read the request: the router's intent, as it was."""
    overridden_intent: str | None = None
    """The router's intent, when the heavy model planned for a different one."""
