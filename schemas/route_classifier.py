"""A route's confidence from a classifier over the request's embedding.

For a router whose server returns no logprobs, and whose own word for its confidence
(`reported`) is not a probability, the other measure the cascade can take: the
probability, given the request's sentence embedding, that the heavy model would read the
intent the router read. It is a logistic regression trained from recorded runs the heavy
model planned (`agentkeel route-classifier FILE`: each run's question embedded by the
semantic cache's embedder, labelled by whether the heavy model kept the router's intent),
kept as one JSON file the inference workers load (`AGENTKEEL_ROUTE_CLASSIFIER`). It
learns which requests this router reads wrongly, not the intents themselves: retrain it
when the router model, its prompts or the domain change. Which measure routes better on
a deployment is printed by the training command (`client.classifier_training`: the ROC
AUC of each on the same runs, the classifier's out of fold).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RouteClassifier", "TextEmbedder"]


class TextEmbedder(Protocol):
    """What the classifier reads requests with: the semantic cache's embedder
    (`activities.cache.semantic.embedder.Embedder`) is one."""

    identity: str

    def embed(self, texts: Sequence[str]) -> Any:
        """One unit-length row per text (a numpy array)."""
        ...


class RouteClassifier(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    embedder: str = Field(min_length=1)
    """The identity of the embedder it was trained on (`Embedder.identity`): a worker whose
    embedder differs refuses to start with it."""
    weights: list[float] = Field(min_length=1)
    bias: float
    routes: int = Field(ge=1)
    """How many recorded routes it was trained on."""
    agreed_share: float = Field(ge=0, le=1)
    """The share of those whose intent the heavy model kept."""
    trained_at: datetime

    def probability(self, vector: Sequence[float]) -> float:
        """The chance the heavy model reads the request of `vector` as the router did."""
        if len(vector) != len(self.weights):
            raise ValueError(
                f"an embedding of {len(vector)} dimensions for a classifier of "
                f"{len(self.weights)}: trained on another embedder"
            )
        z = self.bias + math.fsum(w * x for w, x in zip(self.weights, vector, strict=True))
        return _sigmoid(z)

    @classmethod
    def load(cls, path: str | Path) -> RouteClassifier:
        """Raises `ValueError` naming the file when it is no classifier."""
        try:
            return cls.model_validate_json(Path(path).read_text())
        except (OSError, ValueError) as exc:
            message = f"AGENTKEEL_ROUTE_CLASSIFIER={path}: not a route classifier: {exc}"
            raise ValueError(message) from None

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.model_dump_json())


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
