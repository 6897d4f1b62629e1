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


class Route(BaseModel):
    intent: str
    confidence: float = Field(ge=0.0, le=1.0)
    tier: Tier = Tier.RULES
    tools: list[str] = Field(default_factory=list)
    reason: str = ""
    """Why this tier decided as it did (the router's probability, an escalation, ...)."""
    router_intent: str | None = None
    """Set once a planner has re-read the request: the router's intent, as it was."""
    overridden_intent: str | None = None
    """The router's intent, when the heavy model planned for a different one."""
