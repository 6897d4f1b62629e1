"""Which model serves each tier, from settings: the light router and the heavy planner.

`AGENTKEEL_LIGHT_ENGINE` / `AGENTKEEL_HEAVY_ENGINE` pick the kind (`rules`, `openai`,
`vllm`); `..._URL` and `..._MODEL` say where and which; `..._VLLM_<OPTION>` set the
in-process engine's levers (`VllmSettings` fields). Everything is checked here, before
any model loads, so a typo fails the worker at start with the variable's name.

Reads settings only and imports no policy or engine code: clients compute the cache
version from it (`effective_cache_version`) without loading LangGraph or a model stack.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentkeel.activities.cache.path_cache import cache_version
from agentkeel.inference.engines.vllm_settings import SpeculativeSettings, VllmSettings
from agentkeel.inference.llm.version import llm_policy_version
from agentkeel.inference.version import rules_policy_version
from agentkeel.schemas.route import Tier
from agentkeel.workers.settings import ENV_PREFIX, Settings, SettingsError

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

    def describe(self) -> str:
        """Everything about this engine that changes what it answers (for the cache version)."""
        if self.kind == EngineKind.RULES:
            return "rules"
        where = f" at {self.url}" if self.url else ""
        options = f" {self.vllm.engine_args()}" if self.vllm is not None else ""
        return f"{self.kind.value}:{self.model}{where}{options}"


def engine_config(settings: Settings, tier: Tier) -> EngineConfig | None:
    """The configured engine of `tier` (light or heavy); None when the tier is not set.

    Light unset means the rules policy routes; heavy unset means the light tier plans too.
    """
    name = tier.value
    own = settings.model_tier(name)
    kind_raw, url, model, options = own.engine, own.url, own.model, own.vllm
    var = f"{ENV_PREFIX}{name.upper()}_ENGINE"
    if not kind_raw:
        if url:
            kind_raw = EngineKind.OPENAI
        elif model or options:
            # A model without a URL or an engine kind is a mistake, not a request for rules.
            raise SettingsError(
                f"{ENV_PREFIX}{name.upper()}_MODEL or _VLLM_* options are set without "
                f"{ENV_PREFIX}{name.upper()}_URL (an OpenAI-compatible server) or {var}=vllm"
            )
        else:
            return None if tier == Tier.HEAVY else EngineConfig(tier, EngineKind.RULES)
    try:
        kind = EngineKind(kind_raw)
    except ValueError:
        raise SettingsError(f"{var} must be rules, openai or vllm, got {kind_raw!r}") from None
    if kind == EngineKind.RULES:
        return EngineConfig(tier, kind)
    if not model:
        raise SettingsError(f"{var}={kind.value} needs {ENV_PREFIX}{name.upper()}_MODEL")
    if kind == EngineKind.OPENAI:
        if not url:
            raise SettingsError(f"{var}=openai needs {ENV_PREFIX}{name.upper()}_URL")
        return EngineConfig(tier, kind, model=model, url=url)
    prefix = f"{ENV_PREFIX}{name.upper()}_VLLM_"
    return EngineConfig(tier, kind, model=model, vllm=vllm_settings(model, options, prefix))


def vllm_settings(model: str, options: Mapping[str, str], prefix: str) -> VllmSettings:
    """`VllmSettings` from `<PREFIX><FIELD>=value` strings, typed by the dataclass's fields.

    Special forms: `SPECULATIVE` is `off`, `ngram`, `ngram:<tokens>` or
    `draft_model:<path>`; `ROPE_SCALING` and `ENGINE_OVERRIDES` are JSON objects.
    """
    hints = typing.get_type_hints(VllmSettings)
    known = {f.name for f in dataclasses.fields(VllmSettings)} - {"model"}
    values: dict[str, Any] = {}
    for key, raw in options.items():
        var = prefix + key.upper()
        if key not in known:
            raise SettingsError(f"{var} is not a vLLM option (known: {', '.join(sorted(known))})")
        if key == "speculative":
            values[key] = _speculative(raw, var)
        elif key in ("rope_scaling", "engine_overrides"):
            values[key] = _json_object(raw, var)
        else:
            values[key] = _scalar(hints[key], raw, var)
    return VllmSettings(model=model, **values)


def _speculative(raw: str, var: str) -> SpeculativeSettings | None:
    method, _, arg = raw.partition(":")
    if method in ("off", "none", ""):
        return None
    if method == "ngram":
        if not arg:
            return SpeculativeSettings()
        if not arg.isdigit() or int(arg) < 1:
            raise SettingsError(f"{var}: ngram:<tokens> needs a positive integer, got {raw!r}")
        return SpeculativeSettings(num_speculative_tokens=int(arg))
    if method == "draft_model" and arg:
        return SpeculativeSettings(method="draft_model", draft_model=arg)
    raise SettingsError(f"{var} must be off, ngram, ngram:<tokens> or draft_model:<path>")


def _json_object(raw: str, var: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"{var} must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise SettingsError(f"{var} must be a JSON object, got {raw!r}")
    return value


def _scalar(hint: Any, raw: str, var: str) -> Any:
    """Coerce by the field's type: bool, int, float or str (optional or not)."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    base = next((a for a in args if a is not type(None)), str)
    if raw.lower() in ("none", "null") and type(None) in args:
        return None
    if base is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise SettingsError(f"{var} must be true or false, got {raw!r}")
    if base in (int, float):
        try:
            return base(raw)
        except ValueError:
            raise SettingsError(f"{var} must be a {base.__name__}, got {raw!r}") from None
    return raw


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
