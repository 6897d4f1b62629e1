"""Where the local stack listens: the addresses it was told, or free ones for taken defaults.

On a shared machine something else may already listen on a default port: another team's
Temporal on 7233, another gateway on 8080, another stack's worker metrics on 9464.
`agentkeel up` never joins a Temporal it did not start and was not told about: an address
is *told* when a setting names it (`AGENTKEEL_TEMPORAL_ADDRESS`, the Temporal client
profile's `TEMPORAL_ADDRESS` or profile file), and only a told address that answers is
joined. A default that is taken is moved to a free port and said so
(`StackEndpoints.notes`, printed by `up`); a told port that is taken stops `up` naming the
setting that moves it (`stack.local._check_ports`).
"""

from __future__ import annotations

from agentkeel.cli.stack.procs import split_host_port
from agentkeel.settings.metrics import stack_metrics_addresses
from agentkeel.settings.model import ENV_PREFIX, Settings
from agentkeel.settings.ports import free_port, free_port_pair, port_answers

__all__ = ["PLACED", "place", "told", "untold_environ"]

PLACED = {
    "temporal_address": ENV_PREFIX + "TEMPORAL_ADDRESS",
    "temporal_ui_port": ENV_PREFIX + "TEMPORAL_UI_PORT",
    "gateway_address": ENV_PREFIX + "GATEWAY_ADDRESS",
    "metrics_address": ENV_PREFIX + "METRICS_ADDRESS",
}
"""The settings `place` may move when not told, by the variable that tells them."""


def told(settings: Settings, field: str) -> bool:
    """Whether a setting names `field` (not its default): set from the environment, the
    Temporal profile, or in code."""
    if field == "temporal_address" and settings.temporal_is_named():
        return True
    return field in settings.model_fields_set


def place(settings: Settings, *, workers: bool) -> tuple[Settings, list[str]]:
    """`settings` with each untold default that is taken moved to a free port, and one
    line per move saying what was taken, where it went and the setting that chooses."""
    s, notes, update = settings, [], dict[str, object]()
    host, port = split_host_port(s.temporal_address, 7233)
    starts_temporal = not s.temporal_is_named()
    if starts_temporal and not told(s, "temporal_address") and port_answers(host, port):
        moved = free_port(host)
        update["temporal_address"] = f"{host}:{moved}"
        notes.append(
            f"Temporal: {host}:{port} already answers, a server this stack did not start "
            f"(agentkeel up joins only one it is told about), so it starts its own at "
            f"{host}:{moved}; {PLACED['temporal_address']} names the one to use"
        )
    elif starts_temporal and port_answers(host, port):
        starts_temporal = False  # told, and it answers: joined, no Web UI started
    if starts_temporal and not told(s, "temporal_ui_port"):
        ui = s.temporal_ui_port
        if port_answers(host if host not in ("0.0.0.0", "::") else "127.0.0.1", ui):
            update["temporal_ui_port"] = moved_ui = free_port()
            notes.append(
                f"Temporal Web UI: port {ui} is taken, so it listens on {moved_ui}; "
                f"{PLACED['temporal_ui_port']} sets it"
            )
    gateway_host, gateway_port = split_host_port(s.gateway_address, 8080)
    if workers and not told(s, "gateway_address") and port_answers(gateway_host, gateway_port):
        moved = free_port(gateway_host)
        update["gateway_address"] = f"{gateway_host}:{moved}"
        notes.append(
            f"gateway: {gateway_host}:{gateway_port} is taken, so it listens on "
            f"{gateway_host}:{moved}; {PLACED['gateway_address']} sets it"
        )
    if workers and not told(s, "metrics_address"):
        taken = [a for a in stack_metrics_addresses(s).values() if a and _answers(a)]
        if taken:
            update["metrics_address"] = moved_metrics = f"127.0.0.1:{free_port_pair()}"
            notes.append(
                f"worker metrics: {', '.join(taken)} taken, so the CPU worker's are at "
                f"{moved_metrics} and the inference worker's at the next port; "
                f"{PLACED['metrics_address']} sets them"
            )
    return (s.model_copy(update=update) if update else s), notes


def _answers(address: str) -> bool:
    host, port = split_host_port(address, 0)
    return port_answers(host, port)


def untold_environ(settings: Settings, env: dict[str, str]) -> dict[str, str]:
    """`env` (a child's, with every setting written out) without the placed settings that
    were not told: a background `up` places them itself, as `up` in the foreground does."""
    return {
        k: v
        for k, v in env.items()
        if not any(k == var and not told(settings, f) for f, var in PLACED.items())
    }
