"""The settings of the HTTP gateway and the MCP front door: where it listens, who may call
it, and the quotas of runs, watches and streams per key and tenant.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`), kept apart because
only the front doors read them; the workers never do.
"""

from __future__ import annotations

from pydantic import BaseModel

from agentkeel.settings.types import MODEL_CONFIG, AtLeastOne, HostPort, NotNegative

__all__ = ["GatewaySettings"]


class GatewaySettings(BaseModel):
    """The gateway's address, keys, allowed hosts and quotas; the key `agentkeel mcp` uses."""

    model_config = MODEL_CONFIG

    gateway_address: HostPort = "127.0.0.1:8080"
    """Where the HTTP gateway (`agentkeel gateway`, and `up`) listens, `host:port`. Unset
    and taken, `up` picks a free port and says so (its `Gateway` line shows the URL)."""
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
    gateway_interactive_runs_per_tenant: NotNegative = 0
    """A tenant's runs in flight (started through the gateway, `/mcp` or `agentkeel mcp`;
    its watches aside) that start in the interactive lane; its runs past them start in the
    overflow lane (`schemas.lanes`), after every tenant's interactive runs when the
    workers have a backlog. 0 (the default): every run interactive, each tenant's share
    kept by Temporal's fairness."""
    overflow_runs_in_flight: NotNegative = 2
    """Overflow-lane runs that do their work at once, across every CPU worker of the
    deployment (read by the workers); the others wait in their workflow for a slot, in
    the order they came (`workflows.overflow_gate`). Priority orders only a backlog, so
    without this cap a flood's runs take the CPU between the interactive runs' tasks.
    0: no cap."""
    gateway_watches_per_key: NotNegative = 5
    """Watching runs (`options.watch_every_s`, a repeated step, or a watch asked for in
    words; they may last days) in flight per key. 0: no limit."""
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
