"""Which model serves each tier, from settings: the light router and the heavy planner.

`AGENTKEEL_LIGHT_ENGINE` / `AGENTKEEL_HEAVY_ENGINE` pick the kind (`rules`, `openai`,
`vllm`); `..._URL` and `..._MODEL` say where and which; `..._VLLM_<OPTION>` set the
in-process engine's levers (`VllmSettings` fields, `settings.vllm_options`). The settings
model checks all of it when it is read, so a typo fails the process at start with the
variable's name, before any model loads.

Reads settings only and imports no policy or engine code: clients compute the cache
version from it (`effective_cache_version`) without loading LangGraph or a model stack.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from enum import StrEnum

from agentkeel.activities.cache.path_cache import cache_version
from agentkeel.inference.llm.version import llm_policy_version
from agentkeel.inference.version import rules_policy_version
from agentkeel.schemas.choices import PromptApi
from agentkeel.schemas.route import Tier
from agentkeel.schemas.vllm_settings import VllmSettings
from agentkeel.settings.model import ENV_PREFIX, Settings
from agentkeel.settings.vllm_options import vllm_settings

DEFAULT_INFERENCE_CONCURRENCY = 64
"""Model activities per worker when no vLLM engine says how many sequences it batches."""


class EngineKind(StrEnum):
    RULES = "rules"
    OPENAI = "openai"
    VLLM = "vllm"


@dataclass(frozen=True)
class EngineConfig:
    """One tier's model: what kind of engine, and where it is."""

    tier: Tier
    kind: EngineKind
    model: str | None = None
    url: str | None = None
    vllm: VllmSettings | None = None
    api: PromptApi = "auto"
    """Chat or completions (`AGENTKEEL_<TIER>_API`); for vLLM also in `vllm.api`."""

    def describe(self) -> str:
        """Everything about this engine that changes what it answers (for the cache version)."""
        if self.kind == EngineKind.RULES:
            return "rules"
        where = f" at {self.url}" if self.url else ""
        options = f" {self.vllm.engine_args()}" if self.vllm is not None else ""
        # The API changes the tokens a model sees, so it is part of what it answers.
        api = f" api={self.api}" if self.api != "completions" else ""
        return f"{self.kind.value}:{self.model}{where}{options}{api}"


def engine_config(settings: Settings, tier: Tier) -> EngineConfig | None:
    """The configured engine of `tier` (light or heavy); None when the tier is not set.

    Light unset means the rules policy routes; heavy unset means the light tier plans too.
    The settings model has checked the tier already (a kind, its model and URL, the vLLM
    options), so this only reads it.
    """
    own = settings.model_tier(tier.value)
    if own.engine:
        kind = EngineKind(own.engine)
    elif own.url:
        kind = EngineKind.OPENAI
    else:
        return None if tier == Tier.HEAVY else EngineConfig(tier, EngineKind.RULES)
    if kind == EngineKind.RULES:
        return EngineConfig(tier, kind)
    if kind == EngineKind.OPENAI:
        return EngineConfig(tier, kind, model=own.model, url=own.url, api=own.api)
    model = own.model or ""
    prefix = f"{ENV_PREFIX}{tier.value.upper()}_VLLM_"
    vllm = vllm_settings(model, own.vllm, prefix)
    if "api" not in own.vllm:  # `..._VLLM_API` wins over the tier's `..._API`
        vllm = dataclasses.replace(vllm, api=own.api)
    return EngineConfig(tier, kind, model=model, vllm=vllm, api=vllm.api)


def inference_concurrency(settings: Settings, *configs: EngineConfig | None) -> int:
    """Concurrent model activities: as many as the in-process engines decode in one batch."""
    if settings.inference_concurrency > 0:
        return settings.inference_concurrency
    batches = [c.vllm.max_num_seqs for c in configs if c and c.vllm and c.vllm.max_num_seqs]
    return max(batches) if batches else DEFAULT_INFERENCE_CONCURRENCY


def policy_version(settings: Settings) -> str:
    """Part of every cache key: the rules code's digest, or the models and their settings.

    Workers and clients compute it from the same settings, so a model change starts the
    cache cold everywhere at once.
    """
    if settings.policy_version:
        return settings.policy_version
    light = engine_config(settings, Tier.LIGHT)
    heavy = engine_config(settings, Tier.HEAVY)
    if (light is None or light.kind == EngineKind.RULES) and heavy is None:
        return rules_policy_version()

    described = [c.describe() for c in (light, heavy) if c is not None]
    described.append(f"threshold={settings.router_threshold}")
    digest = hashlib.sha256("|".join(described).encode()).hexdigest()[:8]
    return f"{llm_policy_version()}-{digest}"


def loads_model(settings: Settings) -> bool:
    """True when a tier runs vLLM in-process: the inference worker then takes long to start."""
    configs = (engine_config(settings, Tier.LIGHT), engine_config(settings, Tier.HEAVY))
    return any(c is not None and c.kind == EngineKind.VLLM for c in configs)


def effective_cache_version(settings: Settings) -> str:
    """What workers and clients must agree on: tool catalog digest + policy version."""
    return cache_version(policy_version(settings))
