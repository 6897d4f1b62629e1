"""The settings of the two model tiers, the light router and the heavy planner, as read and
checked: `ModelTierSettings` (one tier's fields) and the `light` / `heavy` fields that hold
them.

A base of `settings.model.Settings` (each tier is `AGENTKEEL_<TIER>_<FIELD>`), kept apart
because a tier is checked as a whole (an engine with what it needs, its vLLM options typed)
when settings are read; which engine that makes is `settings.model_tiers`' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Self

from pydantic import BaseModel, Field, field_validator, model_validator

from agentkeel.schemas.choices import PromptApi
from agentkeel.settings.env import setting_error
from agentkeel.settings.errors import SettingsError
from agentkeel.settings.types import ENV_PREFIX, MODEL_CONFIG, EngineName
from agentkeel.settings.vllm_options import vllm_settings

__all__ = ["TIERS", "ModelTierSettings", "TierSettings"]

TIERS = ("light", "heavy")
"""The model tiers, by the name their variables and `TierSettings.model_tier` take."""


def _no_options() -> Mapping[str, str]:
    return MappingProxyType({})


class ModelTierSettings(BaseModel):
    """One model tier. Each field maps to `AGENTKEEL_<TIER>_<FIELD>` (`LIGHT` or `HEAVY`)."""

    model_config = MODEL_CONFIG

    engine: EngineName = ""
    """`rules`, `openai` or `vllm`. Empty: `openai` when `url` is set; else rules for the
    light tier and no heavy tier."""
    url: str | None = None
    """Base URL of an OpenAI-compatible server (`.../v1`)."""
    model: str | None = None
    """Its served name (`openai`) or its directory / hub name (`vllm`)."""
    api: PromptApi = "auto"
    """`chat`, `completions` or `auto`: how the tier's model is sent its requests. `chat`:
    messages through the model's chat template (`/v1/chat/completions`; in-process vLLM
    applies the tokenizer's template), the API instruct and hosted models are made for;
    `completions`: one raw text, for base models; `auto`: chat unless the server shows the
    model has no chat template (`inference.engines.openai_server`)."""
    prompt_prefix: str = ""
    """Text put before every prompt sent to an `openai` engine over the completions API,
    e.g. `<bos>` for a model whose tokenizer does not add its BOS token (the server maps it
    to the token)."""
    vllm: Mapping[str, str] = Field(default_factory=_no_options)
    """In-process vLLM options, from `AGENTKEEL_<TIER>_VLLM_<OPTION>` (`<OPTION>`: a field
    of `schemas.vllm_settings.VllmSettings`, upper case)."""

    @field_validator("vllm", mode="after")
    @classmethod
    def _read_only(cls, options: Mapping[str, str]) -> Mapping[str, str]:
        return MappingProxyType(dict(options))

    @property
    def configured(self) -> bool:
        return bool(self.engine or self.url or self.model or self.vllm)


class TierSettings(BaseModel):
    """The light and the heavy tier, each checked whole."""

    model_config = MODEL_CONFIG

    light: ModelTierSettings = Field(default_factory=ModelTierSettings)
    """The light router model, from `AGENTKEEL_LIGHT_<FIELD>`. Unset: the rules policy routes."""
    heavy: ModelTierSettings = Field(default_factory=ModelTierSettings)
    """The heavy model that plans when the router is not confident, from
    `AGENTKEEL_HEAVY_<FIELD>`. Unset: the light tier plans too (no escalation)."""

    @model_validator(mode="after")
    def _tiers(self) -> Self:
        """A tier's engine with what it needs, and its vLLM options typed, named if not."""
        for name in TIERS:
            tier, upper = self.model_tier(name), f"{ENV_PREFIX}{name.upper()}"
            var = f"{upper}_ENGINE"
            try:
                vllm_settings(tier.model or "", tier.vllm, f"{upper}_VLLM_")
            except SettingsError as exc:
                raise setting_error(str(exc)) from None
            if not tier.engine and not tier.url and (tier.model or tier.vllm):
                # A model without a URL or an engine kind is a mistake, not a request for rules.
                raise setting_error(
                    f"{upper}_MODEL or _VLLM_* options are set without {upper}_URL "
                    f"(an OpenAI-compatible server) or {var}=vllm"
                )
            if tier.engine in ("openai", "vllm") and not tier.model:
                raise setting_error(f"{var}={tier.engine} needs {upper}_MODEL")
            if tier.engine == "openai" and not tier.url:
                raise setting_error(f"{var}=openai needs {upper}_URL")
        return self

    def model_tier(self, tier: str) -> ModelTierSettings:
        """The settings of model tier `light` or `heavy`."""
        if tier not in TIERS:
            raise ValueError(f"no model tier {tier!r} (tiers: {', '.join(TIERS)})")
        tier_settings: ModelTierSettings = self.light if tier == "light" else self.heavy
        return tier_settings
