"""The router's reading of a request: its label, and how sure it is, by the chosen source.

`logprobs` (`AGENTKEEL_ROUTE_CONFIDENCE=logprobs`): the router decodes one label from a
closed list and its confidence is the label's probability from the model's own token
probabilities (`inference.llm.confidence`); a server that returns none leaves it
unmeasured, and `AGENTKEEL_UNMEASURED_ROUTE` decides. `reported`: the router writes a small
JSON document, the label and its own confidence on a bounded scale (an integer 0 to 10, an
enum every structured-output mode keeps to, OpenAI's strict mode among them), so a
hosted model that returns no logprobs still routes. A model's word for its confidence is
not a probability: calibrate the threshold against what the heavy model decided on
recorded runs (`agentkeel calibrate`, `client.calibration`). `classifier`: the router
decodes the label from the closed list (no logprobs needed), and a classifier over the
request's embedding, trained from recorded runs, gives the confidence
(`inference.llm.route_classifier`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import structlog

from agentkeel.inference.engines.protocol import Engine, JsonSchemaConstraint
from agentkeel.inference.llm.decoding import choose, generate, request_of
from agentkeel.schemas.route import ConfidenceBasis, Tier

__all__ = [
    "REPORTED_ROUTE_CUE",
    "REPORTED_SCALE",
    "ROUTE_CUE",
    "RouteConfidence",
    "RouteReading",
    "read_route",
    "reported_route_schema",
]

log = structlog.get_logger(__name__)

RouteConfidence = Literal["logprobs", "reported", "classifier"]
"""Where the router's confidence comes from (`AGENTKEEL_ROUTE_CONFIDENCE`)."""

REPORTED_SCALE = 10
"""The reported confidence is an integer from 0 (a guess) to this (certain)."""
REPORTED_MAX_TOKENS = 40
ROUTE_CUE = "Intent:"
REPORTED_ROUTE_CUE = (
    "Route JSON (the intent, and how sure you are that it is the right one, from 0: a "
    f"guess, to {REPORTED_SCALE}: certain):"
)

RouteReading = tuple[str, float | None, ConfidenceBasis]
"""The label, its confidence (None: nothing measured) and where that came from."""
Classify = Callable[[], Awaitable[float]]
"""The route classifier's confidence for the request being routed."""


def reported_route_schema(labels: tuple[str, ...]) -> dict[str, Any]:
    """The JSON Schema of a reported route: every property required, nothing else allowed,
    only `enum`-bounded values (OpenAI's strict structured outputs take it as it is)."""
    return {
        "type": "object",
        "properties": {
            "intent": {"type": "string", "enum": list(labels)},
            "confidence": {"type": "integer", "enum": list(range(REPORTED_SCALE + 1))},
        },
        "required": ["intent", "confidence"],
        "additionalProperties": False,
    }


async def read_route(
    engine: Engine,
    tier: Tier,
    prompt: Callable[[str], str],
    labels: tuple[str, ...],
    source: RouteConfidence,
    classify: Classify | None = None,
) -> RouteReading:
    """The router's reading of `prompt(cue)`, the route prompt ending in the source's cue;
    `classify`: the classifier's confidence (source `classifier`), computed meanwhile.

    Raises:
        ConstraintViolationError: the engine could not keep to the labels or the schema.
    """
    if source == "classifier":
        if classify is None:
            raise ValueError("route confidence `classifier` without a classifier")
        (label, _), classified = await asyncio.gather(
            choose(engine, tier, prompt(ROUTE_CUE), labels), _classified(classify)
        )
        basis = ConfidenceBasis.CLASSIFIER if classified is not None else ConfidenceBasis.UNMEASURED
        return label, classified, basis
    if source == "logprobs":
        label, confidence = await choose(engine, tier, prompt(ROUTE_CUE), labels)
        basis = ConfidenceBasis.LOGPROBS if confidence is not None else ConfidenceBasis.UNMEASURED
        return label, confidence, basis
    request = request_of(
        prompt(REPORTED_ROUTE_CUE),
        max_tokens=REPORTED_MAX_TOKENS,
        constraint=JsonSchemaConstraint(json_schema=reported_route_schema(labels)),
    )
    document = (await generate(engine, tier, request)).parsed
    return document["intent"], document["confidence"] / REPORTED_SCALE, ConfidenceBasis.REPORTED


async def _classified(classify: Classify) -> float | None:
    """The classifier's confidence; None (unmeasured: `unmeasured_route` decides) when it
    fails, so a broken embedder degrades the route rather than failing the run."""
    try:
        confidence = await classify()
    except Exception as exc:  # the embedder, a foreign vector: any of it is a measurement lost
        log.warning("route_classifier_failed", error=str(exc))
        return None
    return confidence if 0.0 <= confidence <= 1.0 else None
