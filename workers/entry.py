"""`agentkeel.run_worker`: serve one worker process of the configured domain until SIGTERM."""

from __future__ import annotations

from agentkeel.settings.domain_assembly import check_domain
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.settings.model import Settings

__all__ = ["run_worker"]


def run_worker(kind: str, settings: Settings | None = None) -> None:
    """Run a `cpu` worker (workflows, tools, caches) or an `inference` worker (models) for
    the domain `AGENTKEEL_DOMAIN` names, with settings from the environment by default."""
    if kind not in ("cpu", "inference"):
        raise ValueError(f"worker kind must be cpu or inference, got {kind!r}")
    settings = settings or Settings.from_env()
    # Checked now; installed by the worker with the tools its MCP servers list.
    check_domain(settings)
    from agentkeel.workers.worker import run_cpu_worker, run_inference_worker

    main = run_cpu_worker(settings) if kind == "cpu" else run_inference_worker(settings)
    run_loop(main, settings.event_loop)
