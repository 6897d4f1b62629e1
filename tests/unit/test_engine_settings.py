"""Choosing models by settings: `AGENTKEEL_LIGHT_*`, `AGENTKEEL_HEAVY_*`, the threshold."""

from __future__ import annotations

import socket

import pytest

from agentkeel.examples.shop.rules.policy import RulesPolicy
from agentkeel.inference.engines.protocol import GenerateRequest
from agentkeel.inference.fallback import FallbackPolicy
from agentkeel.inference.llm.cascade import CascadePolicy
from agentkeel.inference.llm.policy import LlmPolicy
from agentkeel.schemas.route import Tier
from agentkeel.schemas.vllm_settings import SpeculativeSettings
from agentkeel.settings.model import Settings, SettingsError, StartupError
from agentkeel.settings.model_tiers import (
    EngineKind,
    effective_cache_version,
    engine_config,
    policy_version,
)
from agentkeel.workers.policy_assembly import build_policy, local_policy


def settings(**env: str) -> Settings:
    return Settings.from_env({f"AGENTKEEL_{k}": v for k, v in env.items()})


def test_nothing_set_is_the_rules_policy() -> None:
    assembly = build_policy(settings())
    assert isinstance(assembly.policy, RulesPolicy)
    assert assembly.engines == []
    assert assembly.concurrency == 64


def test_a_light_url_alone_is_an_openai_engine_that_also_plans() -> None:
    s = settings(LIGHT_URL="http://127.0.0.1:9/v1", LIGHT_MODEL="router")
    light = engine_config(s, Tier.LIGHT)
    assert light is not None and light.kind == EngineKind.OPENAI
    assert engine_config(s, Tier.HEAVY) is None
    assembly = build_policy(s)
    # A model-backed policy falls back to the rules while its model server is down.
    assert isinstance(assembly.policy, FallbackPolicy)
    assert isinstance(assembly.policy.primary, LlmPolicy)
    assert assembly.policy.primary.tier == Tier.LIGHT


def test_light_and_heavy_make_a_cascade_with_vllm_levers() -> None:
    s = settings(
        LIGHT_URL="http://127.0.0.1:9/v1",
        LIGHT_MODEL="router",
        HEAVY_ENGINE="vllm",
        HEAVY_MODEL="/models/planner",
        HEAVY_VLLM_QUANTIZATION="awq",
        HEAVY_VLLM_MAX_NUM_SEQS="32",
        HEAVY_VLLM_ENABLE_PREFIX_CACHING="false",
        HEAVY_VLLM_SPECULATIVE="ngram:3",
        HEAVY_VLLM_ROPE_SCALING='{"rope_type": "yarn", "factor": 4.0}',
        ROUTER_THRESHOLD="0.8",
    )
    heavy = engine_config(s, Tier.HEAVY)
    assert heavy is not None and heavy.vllm is not None
    assert heavy.vllm.quantization == "awq"
    assert heavy.vllm.max_num_seqs == 32
    assert heavy.vllm.enable_prefix_caching is False
    assert heavy.vllm.speculative == SpeculativeSettings(num_speculative_tokens=3)
    assert heavy.vllm.rope_scaling == {"rope_type": "yarn", "factor": 4.0}
    assembly = build_policy(s)
    assert isinstance(assembly.policy, FallbackPolicy)
    cascade = assembly.policy.primary
    assert isinstance(cascade, CascadePolicy)
    assert isinstance(cascade.light, LlmPolicy)
    assert cascade.light.threshold == 0.8


def test_the_light_vllm_engine_sets_the_workers_concurrency() -> None:
    s = settings(LIGHT_ENGINE="vllm", LIGHT_MODEL="/m", LIGHT_VLLM_MAX_NUM_SEQS="24")
    assert build_policy(s).concurrency == 24
    assert build_policy(settings(INFERENCE_CONCURRENCY="5")).concurrency == 5


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"LIGHT_ENGINE": "gpt"}, "AGENTKEEL_LIGHT_ENGINE"),
        ({"HEAVY_ENGINE": "openai", "HEAVY_MODEL": "m"}, "AGENTKEEL_HEAVY_URL"),
        ({"LIGHT_ENGINE": "vllm"}, "AGENTKEEL_LIGHT_MODEL"),
        ({"LIGHT_ENGINE": "vllm", "LIGHT_MODEL": "m", "LIGHT_VLLM_MAX_SEQS": "4"}, "MAX_SEQS"),
        (
            {
                "LIGHT_ENGINE": "vllm",
                "LIGHT_MODEL": "m",
                "LIGHT_VLLM_DTYPE": "x",
                "LIGHT_VLLM_MAX_NUM_SEQS": "many",
            },
            "MAX_NUM_SEQS",
        ),
        (
            {"LIGHT_ENGINE": "vllm", "LIGHT_MODEL": "m", "LIGHT_VLLM_SPECULATIVE": "magic"},
            "SPECULATIVE",
        ),
        (
            {"LIGHT_ENGINE": "vllm", "LIGHT_MODEL": "m", "LIGHT_VLLM_ROPE_SCALING": "[1]"},
            "ROPE_SCALING",
        ),
        ({"ROUTER_THRESHOLD": "1.5"}, "AGENTKEEL_ROUTER_THRESHOLD"),
        ({"LIGHT_MODEL": "router"}, "AGENTKEEL_LIGHT_URL"),
        ({"HEAVY_MODEL": "planner"}, "AGENTKEEL_HEAVY_ENGINE=vllm"),
    ],
)
def test_bad_settings_fail_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        build_policy(settings(**env))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_model_server_fails_the_worker_at_start() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    assembly = build_policy(settings(LIGHT_URL=url, LIGHT_MODEL="router"))
    with pytest.raises(StartupError, match=r"no model server answers at http://127\.0\.0\.1"):
        await assembly.start()


def test_the_cache_version_follows_the_models() -> None:
    rules = effective_cache_version(settings())
    one = effective_cache_version(settings(LIGHT_URL="http://a/v1", LIGHT_MODEL="m1"))
    two = effective_cache_version(settings(LIGHT_URL="http://a/v1", LIGHT_MODEL="m2"))
    assert len({rules, one, two}) == 3
    assert policy_version(settings(POLICY_VERSION="pinned")) == "pinned"


def test_model_limits_and_prompt_prefix_reach_the_policy_and_engine() -> None:
    s = settings(
        LIGHT_URL="http://127.0.0.1:9/v1",
        LIGHT_MODEL="router",
        LIGHT_PROMPT_PREFIX="<bos>",
        LIGHT_API="completions",
        PLAN_MAX_TOKENS="160",
        ANSWER_MAX_TOKENS="40",
        PLAN_ATTEMPTS="1",
    )
    assembly = build_policy(s)
    assert isinstance(assembly.policy, FallbackPolicy)
    policy = assembly.policy.primary
    assert isinstance(policy, LlmPolicy)
    assert (policy.plan_max_tokens, policy.answer_max_tokens, policy.plan_attempts) == (160, 40, 1)
    params = assembly.engines[0]._params(  # type: ignore[attr-defined]
        GenerateRequest(prompt="Hi"), "none", stream=False
    )
    assert params["prompt"] == "<bos>Hi"


def test_a_tier_speaks_chat_unless_told_otherwise() -> None:
    s = settings(LIGHT_URL="http://127.0.0.1:9/v1", LIGHT_MODEL="instruct", HEAVY_ENGINE="vllm",
                 HEAVY_MODEL="/models/base", HEAVY_API="completions")  # fmt: skip
    light = engine_config(s, Tier.LIGHT)
    heavy = engine_config(s, Tier.HEAVY)
    assert light is not None and light.api == "auto"
    assert heavy is not None and heavy.vllm is not None and heavy.vllm.api == "completions"
    engine = build_policy(s).engines[0]
    request = GenerateRequest(system="SYSTEM", prompt="Hi")
    params = engine._params(request, "none", stream=False)  # type: ignore[attr-defined]
    assert "prompt" not in params
    assert params["messages"] == [
        {"role": "system", "content": "SYSTEM"},
        {"role": "user", "content": "Hi"},
    ]
    told = settings(LIGHT_ENGINE="vllm", LIGHT_MODEL="/m", LIGHT_API="chat", LIGHT_VLLM_API="auto")
    config = engine_config(told, Tier.LIGHT)
    assert config is not None and config.vllm is not None and config.vllm.api == "auto"


def test_the_cpu_worker_serves_policy_steps_itself_where_no_model_is_configured() -> None:
    served = local_policy(settings())
    assert served is not None and isinstance(served.policy, RulesPolicy)
    assert served.engines == []
    assert local_policy(settings(LIGHT_URL="http://127.0.0.1:9/v1", LIGHT_MODEL="m")) is None
    assert local_policy(settings(HEAVY_ENGINE="vllm", HEAVY_MODEL="/m")) is None
    assert local_policy(settings(LOCAL_POLICY="off")) is None
    with pytest.raises(SettingsError, match="AGENTKEEL_LOCAL_POLICY must be one of auto, on, off"):
        local_policy(settings(LOCAL_POLICY="yes"))


ROUTER = {"LIGHT_URL": "http://127.0.0.1:9/v1", "LIGHT_MODEL": "router"}
"""A light tier on an HTTP server (never dialled: nothing here starts an engine)."""


def test_local_policy_on_serves_the_model_tiers_from_the_cpu_worker() -> None:
    """`on`: the policy the settings make, its engines not yet started (the worker starts
    them); a rules-only deployment is served as under `auto`."""
    heavy = {"HEAVY_URL": ROUTER["LIGHT_URL"], "HEAVY_MODEL": "planner"}
    told = settings(LOCAL_POLICY="on", **ROUTER, **heavy)
    served = local_policy(told)
    assert served is not None
    assert [engine.name for engine in served.engines] == [
        engine.name for engine in build_policy(told).engines
    ]
    assert len(served.engines) == 2
    policy = served.policy
    inner = policy.primary if isinstance(policy, FallbackPolicy) else policy
    assert isinstance(inner, CascadePolicy)
    rules_only = local_policy(settings(LOCAL_POLICY="on"))
    assert rules_only is not None and isinstance(rules_only.policy, RulesPolicy)


def test_local_policy_on_refuses_an_in_process_vllm_tier_naming_it() -> None:
    told = settings(LOCAL_POLICY="on", **ROUTER, HEAVY_ENGINE="vllm", HEAVY_MODEL="/m")
    with pytest.raises(StartupError, match="heavy tier is an in-process vLLM engine") as caught:
        local_policy(told)
    assert "AGENTKEEL_HEAVY_URL" in str(caught.value)
    assert "AGENTKEEL_LOCAL_POLICY=auto" in str(caught.value)
