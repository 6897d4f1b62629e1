"""The route classifier's confidence for the request being routed
(`AGENTKEEL_ROUTE_CONFIDENCE=classifier`; the classifier: `schemas.route_classifier`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from agentkeel.schemas.route_classifier import RouteClassifier, TextEmbedder

__all__ = ["classifier_scorer"]


def classifier_scorer(
    classifier: RouteClassifier, embedder: TextEmbedder
) -> Callable[[str], Awaitable[float]]:
    """The classifier's confidence for a question, its embedding computed off the loop."""

    async def score(question: str) -> float:
        vectors = await asyncio.to_thread(embedder.embed, [question])
        return classifier.probability(vectors[0].tolist())

    return score
