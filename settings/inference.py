"""The settings of model calls: the servers' key, when a route escalates, how many calls run
at once, and the token budgets of plans, answers and prompts.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`), kept apart because
they govern every call to a model, whichever tier and engine serves it (`settings.tiers`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agentkeel.settings.types import MODEL_CONFIG, AtLeastOne, Fraction, NotNegative

__all__ = ["InferenceSettings"]


class InferenceSettings(BaseModel):
    """Escalation, concurrency and token budgets of the model calls."""

    model_config = MODEL_CONFIG

    model_api_key: str = "EMPTY"
    """Bearer token for the OpenAI-compatible servers (vLLM without `--api-key` ignores it)."""
    router_threshold: Fraction = 0.7
    """Route confidence below this escalates planning to the heavy model."""
    unmeasured_route: Literal["escalate", "trust"] = "escalate"
    """The declared rule for a model route whose confidence cannot be measured (its server
    returns no logprobs): `escalate` plans every such request with the planner (the heavy
    tier in a cascade); `trust` lets the router's label and draft plan stand. Such routes
    say `basis: unmeasured` and confidence 0, never a stand-in number."""
    route_confidence: Literal["logprobs", "reported", "classifier"] = "logprobs"
    """Where the router's confidence comes from: `logprobs`, the label's probability from
    the model's token probabilities (a server without them leaves the route unmeasured:
    `unmeasured_route` decides); `reported`, the router model's own confidence (0-10) in
    its structured output, for providers that return no logprobs; `classifier`, a
    classifier over the request's embedding trained from recorded runs
    (`route_classifier`). Calibrate `router_threshold` for any from recorded runs:
    `agentkeel calibrate`."""
    route_classifier: Path | None = None
    """The file `agentkeel route-classifier FILE` wrote: needed by
    `route_confidence=classifier`, with the semantic extra (its embedder)."""
    inference_concurrency: NotNegative = 0
    """Concurrent model activities per inference worker. 0: the light vLLM engine's
    `max_num_seqs` (so requests meet in one batch), else 64."""
    model_concurrency: NotNegative = 0
    """Model calls in flight at once across all inference workers of this deployment
    together (light and heavy), held as leases in Redis so that N workers in front of one
    shared model server never send it more; 0: no such cap (each worker still admits
    `inference_concurrency`). Without Redis each worker holds the whole cap itself."""
    plan_attempts: AtLeastOne = 3
    """Decodes per plan activity before an unusable model output fails the plan round."""
    plan_max_tokens: AtLeastOne = 384
    """Longest plan a model may write (a plan of the catalog's tools takes 60-200)."""
    answer_max_tokens: AtLeastOne = 200
    """Longest answer a model may write."""
    context_token_budget: AtLeastOne = 3072
    """Prompt tokens a model call may use; older turns and tool output give way first."""
    context_recent_turns: NotNegative = 3
    """Conversation turns kept verbatim in prompts; older ones are summarized."""
