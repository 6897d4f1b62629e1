"""Whether a router's reading stands: its label and confidence against the threshold."""

from __future__ import annotations

from agentkeel.inference.llm.confidence import UnmeasuredRoute
from agentkeel.inference.llm.prompts import UNCERTAIN, intent_tools
from agentkeel.schemas.route import ConfidenceBasis, Route, Tier, confidence_word


def judged_route(
    label: str,
    confidence: float | None,
    basis: ConfidenceBasis,
    name: str,
    tier: Tier,
    threshold: float,
    unmeasured_route: UnmeasuredRoute,
) -> tuple[Route, bool]:
    """The route of `label` and whether it stands: its confidence (measured or reported)
    against the threshold, or, with none, by the declared rule (`unmeasured_route`); `name`
    (the engine's) is for the reason."""
    said = confidence_word(basis)
    if confidence is None:
        confident = label != UNCERTAIN and unmeasured_route == "trust"
        value, basis = 0.0, ConfidenceBasis.UNMEASURED
        reason = (
            f"{name}: {label}, confidence unmeasured (no logprobs); rule "
            f"unmeasured_route={unmeasured_route}: {'trusted' if confident else 'unsure'}"
        )
    elif label == UNCERTAIN:
        confident = False
        value, reason = 1.0 - confidence, f"{name} said uncertain ({said}={confidence:.2f})"
    else:
        confident, value = confidence >= threshold, confidence
        reason = (
            f"{name}: {label} with {said}={confidence:.2f} "
            f"{'>=' if confident else '<'} threshold {threshold:.2f}"
        )
    known = label != UNCERTAIN
    route = Route(
        intent=label if known else "unknown",
        confidence=round(value, 4),
        basis=basis,
        tier=tier,
        tools=list(intent_tools().get(label, ())) if known else [],
        reason=reason,
    )
    return route, confident
