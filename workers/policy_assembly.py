"""The inference worker's policy from settings: rules, one LLM tier, or the cascade.

Engines are built from the tiers `settings.model_tiers` read and checked; the assembly owns
them: `start()` loads or connects each, `close()` releases them when the worker stops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from agentkeel.inference.engines.protocol import Engine, EngineUnavailableError
from agentkeel.inference.fallback import FallbackPolicy
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.inference.llm.route_classifier import classifier_scorer
from agentkeel.inference.plans_only import PlansOnlyPolicy
from agentkeel.inference.policy import Policy
from agentkeel.schemas.route import Tier
from agentkeel.schemas.route_classifier import RouteClassifier
from agentkeel.sdk.serving import active_domain
from agentkeel.settings.model import Settings, StartupError
from agentkeel.settings.model_tiers import (
    EngineConfig,
    EngineKind,
    engine_config,
    inference_concurrency,
)

log = structlog.get_logger(__name__)


def build_engine(config: EngineConfig, settings: Settings) -> Engine | None:
    """The engine object (not started; `start()` loads or connects). None for rules."""
    if config.kind == EngineKind.OPENAI:
        from agentkeel.inference.engines.openai_compat import OpenAICompatEngine

        assert config.url is not None and config.model is not None
        return OpenAICompatEngine(
            base_url=config.url,
            model=config.model,
            api_key=settings.model_api_key,
            api=config.api,
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
            except BaseException:
                await self.close()  # no client left open behind an unexpected failure
                raise

    async def close(self) -> None:
        """Close every engine, each whatever the others did (a failure is logged)."""
        for engine in self.engines:
            try:
                await engine.close()
            except Exception as exc:
                log.warning("engine_close_failed", engine=engine.name, error=repr(exc))


def build_policy(settings: Settings) -> PolicyAssembly:
    """Rules, one LLM tier, or the light → heavy cascade, as the settings say."""
    light = engine_config(settings, Tier.LIGHT)
    heavy = engine_config(settings, Tier.HEAVY)
    assert light is not None  # light always has a config: rules when unset
    engines: list[Engine] = []
    classify = route_classifier(settings)

    def tier_policy(config: EngineConfig) -> Policy:
        engine = build_engine(config, settings)
        if engine is None:
            return model_free_policy(settings)
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
            unmeasured_route=settings.unmeasured_route,
            route_confidence=settings.route_confidence,
            classify=classify,
        )

    policy = tier_policy(light)
    if heavy is not None and heavy.kind != EngineKind.RULES:
        policy = CascadePolicy(policy, tier_policy(heavy))
    fallback = rules_policy(settings)
    if engines and fallback is not None:
        # Only the served domain's own rules stand in for its model, never another's.
        policy = FallbackPolicy(policy, fallback)
    return PolicyAssembly(policy, engines, inference_concurrency(settings, light, heavy))


def route_classifier(settings: Settings) -> Callable[[str], Awaitable[float]] | None:
    """The router's classifier confidence (`route_confidence=classifier`), its file checked
    against the embedder it was trained on; raises `StartupError` naming what is wrong."""
    if settings.route_confidence != "classifier":
        return None
    if settings.route_classifier is None:
        raise StartupError(
            "AGENTKEEL_ROUTE_CONFIDENCE=classifier needs AGENTKEEL_ROUTE_CLASSIFIER: the file "
            "`agentkeel route-classifier FILE` writes"
        )
    try:
        classifier = RouteClassifier.load(settings.route_classifier)
        from agentkeel.activities.cache.semantic.setup import shared_embedder
    except (ValueError, ImportError) as exc:
        raise StartupError(f"route classifier: {exc}") from exc
    model = str(settings.embedder_model) if settings.embedder_model else None
    embedder = shared_embedder(model, settings.embedder_backend)
    if embedder.identity != classifier.embedder:
        raise StartupError(
            f"AGENTKEEL_ROUTE_CLASSIFIER={settings.route_classifier} was trained on embedder "
            f"{classifier.embedder!r}; this worker's is {embedder.identity!r}: train it again"
        )
    return classifier_scorer(classifier, embedder)


def rules_policy(settings: Settings) -> Policy | None:
    """The served domain's own rules policy, or None when it has none."""
    domain = active_domain()
    if domain.rules_policy is None:
        return None
    made: Policy = domain.rules_policy(settings.router_threshold)
    return made


def model_free_policy(settings: Settings) -> Policy:
    """What answers without a model: the domain's rules, else plans sent with requests."""
    policy = rules_policy(settings)
    if policy is None:
        domain = active_domain().name
        log.warning(
            "no_planner",
            domain=domain,
            reason="no model is configured and the domain has no rules policy: only "
            "requests that carry their own plan can run",
        )
        return PlansOnlyPolicy(domain)
    return policy


def local_policy(settings: Settings) -> PolicyAssembly | None:
    """The policy a CPU worker serves itself (`activities.local_policy`), not started.

    `auto`: the rules policy where no model is configured, else None (the inference pool
    serves every step); `on`: the policy the settings make, its models included, each
    reached over HTTP from this worker (an in-process vLLM tier needs the inference pool:
    `StartupError`); `off`: None.
    """
    if settings.local_policy == "off":
        return None
    tiers = [engine_config(settings, tier) for tier in (Tier.LIGHT, Tier.HEAVY)]
    models = [config for config in tiers if config is not None and config.kind != EngineKind.RULES]
    if not models:
        return PolicyAssembly(model_free_policy(settings), [], concurrency=1)
    if settings.local_policy == "auto":
        return None
    for config in models:
        if config.kind == EngineKind.VLLM:
            name = config.tier.value.upper()
            raise StartupError(
                f"AGENTKEEL_LOCAL_POLICY=on runs the model steps on the CPU worker, which "
                f"reaches its models over HTTP, but the {config.tier.value} tier is an "
                f"in-process vLLM engine (AGENTKEEL_{name}_ENGINE=vllm), which only the "
                f"inference pool hosts: serve it over HTTP (AGENTKEEL_{name}_URL) or set "
                "AGENTKEEL_LOCAL_POLICY=auto"
            )
    return build_policy(settings)
