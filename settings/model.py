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
from types import MappingProxyType

from pydantic import field_validator

from agentkeel.sdk.mcp import McpServer, parse_mcp_servers
from agentkeel.settings.approvals import ApprovalSettings
from agentkeel.settings.cache import CacheSettings
from agentkeel.settings.domain import check_domain_variables
from agentkeel.settings.downstreams import DownstreamSettings
from agentkeel.settings.env import env_of, read_model
from agentkeel.settings.errors import SettingsError as SettingsError
from agentkeel.settings.errors import StartupError as StartupError
from agentkeel.settings.gateway import GatewaySettings
from agentkeel.settings.head_start import HeadStartSettings
from agentkeel.settings.head_start import speculative_calls as speculative_calls
from agentkeel.settings.inference import InferenceSettings
from agentkeel.settings.rollout import RolloutSettings
from agentkeel.settings.services import ServiceSettings
from agentkeel.settings.temporal_profile import read_temporal_profile
from agentkeel.settings.tiers import ModelTierSettings as ModelTierSettings
from agentkeel.settings.tiers import TierSettings
from agentkeel.settings.types import ENV_PREFIX as ENV_PREFIX
from agentkeel.settings.types import (
    MODEL_CONFIG,
    LogFormat,
    LogLevel,
    OnOff,
    metrics_ip_port,
    parse_duration,
)
from agentkeel.settings.usage import UsageSettings
from agentkeel.settings.worker_process import WorkerProcessSettings

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


# The groups are listed last first: pydantic orders the fields from the last base to the
# first, and that order is the reference's (`docs/settings.md`) and the order in which a
# bad value is found.
class Settings(
    UsageSettings,
    GatewaySettings,
    HeadStartSettings,
    DownstreamSettings,
    InferenceSettings,
    WorkerProcessSettings,
    TierSettings,
    ApprovalSettings,
    CacheSettings,
    ServiceSettings,
    RolloutSettings,
):
    """Typed settings. Each field maps to `AGENTKEEL_<FIELD>` (upper case); the groups of
    them are the bases' (`settings.rollout`, `settings.services`, `settings.cache`, ...)."""

    model_config = MODEL_CONFIG

    mcp_servers: str = ""
    """MCP servers whose tools every CPU worker serves beside the domain's: a JSON list of
    objects (`{"name": "time", "command": "mcp-server-time"}`, `{"name": "crm", "url":
    "https://crm.example/mcp", "bearer_token_env": "CRM_TOKEN"}`); every field in
    `docs/mcp.md`. Every process of a deployment must be given the same list."""
    log_format: LogFormat = "auto"
    """`json`, `console`, or `auto` (console on a TTY, JSON otherwise)."""
    log_level: LogLevel = "info"
    """The least severe log records written (any case)."""

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

    def to_env(self) -> dict[str, str | None]:
        """Every setting as the variable `from_env` reads it from (None: unset): what a child
        process is given so that it reads these same settings."""
        return env_of(self, ENV_PREFIX)
