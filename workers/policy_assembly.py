"""The inference worker's policy from settings: rules, one LLM tier, or the cascade.

Engines are built from the tiers `workers.model_tiers` read and checked; the assembly owns
them: `start()` loads or connects each, `close()` releases them when the worker stops.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentkeel.inference.engines.protocol import Engine, EngineUnavailableError
from agentkeel.inference.fallback import FallbackPolicy
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.policy import Policy
from agentkeel.inference.rules.policy import RulesPolicy
from agentkeel.schemas.route import Tier
from agentkeel.workers.model_tiers import (
    EngineConfig,
    EngineKind,
    engine_config,
    inference_concurrency,
)
from agentkeel.workers.settings import ENV_PREFIX, Settings, SettingsError, StartupError


def build_engine(config: EngineConfig, settings: Settings) -> Engine | None:
    """The engine object (not started; `start()` loads or connects). None for rules."""
    if config.kind == EngineKind.OPENAI:
        from agentkeel.inference.engines.openai_compat import OpenAICompatEngine

        assert config.url is not None and config.model is not None
        return OpenAICompatEngine(
            base_url=config.url,
            model=config.model,
            api_key=settings.model_api_key,
            prompt_prefix=settings.model_tier(config.tier.value).prompt_prefix,
        )
    if config.kind == EngineKind.VLLM:
        from agentkeel.inference.engines.vllm_local import VllmEngine

        assert config.vllm is not None
        return VllmEngine(settings=config.vllm)
    return None


@dataclass
class PolicyAssembly:
    """The inference worker's policy and the engines it owns (started and closed with it)."""

    policy: Policy
    engines: list[Engine]
    concurrency: int

    async def start(self) -> None:
        """Load or connect every engine; the first that cannot fails the worker with its reason."""
        for engine in self.engines:
            try:
                await engine.start()
            except EngineUnavailableError as exc:
                await self.close()
                raise StartupError(f"model engine {engine.name!r} is unavailable: {exc}") from exc

    async def close(self) -> None:
        for engine in self.engines:
            await engine.close()


def build_policy(settings: Settings) -> PolicyAssembly:
    """Rules, one LLM tier, or the light → heavy cascade, as the settings say."""
    if not 0.0 <= settings.router_threshold <= 1.0:
        raise SettingsError(
            f"{ENV_PREFIX}ROUTER_THRESHOLD must be between 0 and 1, got {settings.router_threshold}"
        )
    light = engine_config(settings, Tier.LIGHT)
    heavy = engine_config(settings, Tier.HEAVY)
    assert light is not None  # light always has a config: rules when unset
    engines: list[Engine] = []

    def tier_policy(config: EngineConfig) -> Policy:
        engine = build_engine(config, settings)
        if engine is None:
            return RulesPolicy(threshold=settings.router_threshold)
        engines.append(engine)
        return LlmPolicy(
            engine,
            tier=config.tier,
            threshold=settings.router_threshold,
            context=ContextBuilder(
                budget=settings.context_token_budget, recent_turns=settings.context_recent_turns
            ),
            plan_attempts=settings.plan_attempts,
            plan_max_tokens=settings.plan_max_tokens,
            answer_max_tokens=settings.answer_max_tokens,
        )

    policy = tier_policy(light)
    if heavy is not None and heavy.kind != EngineKind.RULES:
        policy = CascadePolicy(policy, tier_policy(heavy))
    if engines:
        policy = FallbackPolicy(policy, RulesPolicy(threshold=settings.router_threshold))
    return PolicyAssembly(policy, engines, inference_concurrency(settings, light, heavy))


def local_policy(settings: Settings) -> RulesPolicy | None:
    """The policy a CPU worker serves itself (`activities.local_policy`): the rules policy
    where no model is configured and `AGENTKEEL_LOCAL_POLICY` is `auto`; else None."""
    if settings.local_policy not in ("auto", "off"):
        raise SettingsError(
            f"{ENV_PREFIX}LOCAL_POLICY must be auto or off, got {settings.local_policy!r}"
        )
    if settings.local_policy == "off":
        return None
    if not 0.0 <= settings.router_threshold <= 1.0:
        raise SettingsError(
            f"{ENV_PREFIX}ROUTER_THRESHOLD must be between 0 and 1, got {settings.router_threshold}"
        )
    tiers = [engine_config(settings, tier) for tier in (Tier.LIGHT, Tier.HEAVY)]
    if any(config is not None and config.kind != EngineKind.RULES for config in tiers):
        return None
    return RulesPolicy(threshold=settings.router_threshold)
