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
    REPORTED = "reported"
    """The router model's own statement of how sure it is, in its structured output
    (`AGENTKEEL_ROUTE_CONFIDENCE=reported`, `inference.llm.route_reading`): no probability,
    but a number the model gave, recorded so the threshold can be calibrated against it."""
    CLASSIFIER = "classifier"
    """A classifier over the request's embedding, trained from recorded runs, says how
    likely the heavy model reads the intent as the router did
    (`AGENTKEEL_ROUTE_CONFIDENCE=classifier`, `inference.llm.route_classifier`)."""
    RULES = "rules"
    """A rule's fixed level (the rules or patterns policy): compared with the threshold
    like a probability, but nobody measured it."""
    UNMEASURED = "unmeasured"
    """The engine returned no logprobs: `confidence` is 0 and the declared rule
    `AGENTKEEL_UNMEASURED_ROUTE` decided whether the route stands. Also a route nobody
    made: the stand-in a planner started beside the router is given, or the record of a
    run cancelled before it was routed."""
    GIVEN = "given"
    """No routing decision: the caller's plan, or a cached path."""


def confidence_word(basis: ConfidenceBasis | None) -> str:
    """How a reason names a confidence of `basis`: `p` for a probability the model's
    logprobs gave, else what gave it."""
    words = {ConfidenceBasis.REPORTED: "reported", ConfidenceBasis.CLASSIFIER: "classified"}
    return words.get(basis, "p") if basis is not None else "p"


STAND_IN_INTENT = "uncertain"
"""The intent of the route a planner is given when it starts beside the router, before any
route exists (`activities.plan_ahead.AHEAD_ROUTE`): no reading an override is counted from."""


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

    @property
    def measured_confidence(self) -> float | None:
        """`confidence` where a model gave it: a measured probability (or a route too old
        to say), or the router's reported confidence (`basis` tells which); None where a
        rule, a missing logprob or the caller decided: the number to show, record and
        trace, so that no constant passes for a measurement."""
        measured = self.basis in (
            None,
            ConfidenceBasis.LOGPROBS,
            ConfidenceBasis.REPORTED,
            ConfidenceBasis.CLASSIFIER,
        )
        return self.confidence if measured else None

    @property
    def confidence_told(self) -> str:
        """The confidence in words for a reason: `p=0.83` where measured, `reported=0.8`
        where the model said it, else its basis."""
        measured = self.measured_confidence
        if measured is None:
            return f"{self.basis} confidence"
        return f"{confidence_word(self.basis)}={measured:.2f}"
