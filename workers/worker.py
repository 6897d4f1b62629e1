"""Worker factories with explicit concurrency, and the process entry points."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import Any

import structlog
from temporalio.client import Client
from temporalio.worker import (
    PatchActivationInput,
    UnsandboxedWorkflowRunner,
    Worker,
    WorkerDeploymentConfig,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.activities.model_slots import ModelSlots
from agentkeel.sdk.serving import active_domain
from agentkeel.settings.mcp_assembly import serve_domain_with_mcp
from agentkeel.settings.metrics import metrics_address, metrics_runtime
from agentkeel.settings.model import (
    Settings,
    StartupError,
    speculative_calls,
)
from agentkeel.settings.namespace_setup import ensure_search_attributes
from agentkeel.settings.tracing import configure_tracing
from agentkeel.workers.generations import (
    follow_catalog,
    restart_for_new_catalog,
    serve_generations,
    stop_on_signals,
)
from agentkeel.workers.policy_assembly import build_policy
from agentkeel.workers.policy_offers import unsure_forecast, usage_metering
from agentkeel.workers.readiness import Readiness, health_endpoint
from agentkeel.workers.resources import (
    cpu_activities,
    inference_resources,
)
from agentkeel.workers.slots import DEFAULT_SLOTS, CpuSlots, cpu_slots
from agentkeel.workers.temporal_client import connect
from agentkeel.workers.versioning import deployment_config
from agentkeel.workers.warming_schedule import ensure_warming_schedule
from agentkeel.workflows.agent import AgentWorkflow
from agentkeel.workflows.fan_out_part import FanOutWorkflow
from agentkeel.workflows.timeouts import RESPOND_TIMEOUT
from agentkeel.workflows.warmer import CacheWarmerWorkflow

log = structlog.get_logger(__name__)

GRACEFUL_SHUTDOWN = timedelta(seconds=10)
STICKY_TIMEOUT = timedelta(seconds=2)


def cpu_worker(
    client: Client,
    task_queue: str,
    activities: Sequence[Callable[..., Any]],
    *,
    extra_workflows: Sequence[type] = (),
    sandboxed: bool = False,
    inline_activations: bool = True,
    deployment: WorkerDeploymentConfig | None = None,
    held_patches: Collection[str] = (),
    slots: CpuSlots = DEFAULT_SLOTS,
) -> Worker:
    """Runs `AgentWorkflow` (and the cache warmer), the tools, the cache and persistence.

    `sandboxed`: run the workflows in Temporal's sandbox (`AGENTKEEL_WORKFLOW_SANDBOX=on`).
    Off by default, for speed: the sandbox re-imports each workflow module for every run and
    enters its restricted context for every activation and every payload, which under load
    took about a third of this worker's CPU (`python -m bench.load`: 25 -> 34 runs/s at 20
    in flight, the same-shape bare workflow 33). What the sandbox guards, no clock, random,
    I/O or shared mutable state in workflow code, is checked instead where it cannot cost
    a run anything: every recorded history replays under the sandbox in the test suite
    (`tests/unit/test_replay.py`), and the suite also runs the agent sandboxed.

    `inline_activations` (`AGENTKEEL_WORKFLOW_ACTIVATIONS=inline`, unsandboxed only): each
    workflow activation runs on the worker's event loop instead of being handed to a thread
    and back (the SDK's `debug_mode` path). The hand-off, two threads taking turns at the
    GIL for every activation, was about a quarter of this worker's CPU per run under load
    (`bench.load`: 24 -> 31-34 runs/s at 20 in flight, `docs/benchmarks.md`). The price is
    the SDK's deadlock detector: an activation that never yields stalls the whole worker,
    where a thread would have failed its task after 2 s. The workflow code is agentkeel's own
    and replay-tested; a domain's in-workflow tools are pure functions over step outputs.
    A long activation (the first of a long history after a restart) also holds back, for
    its duration, the timers of this worker's activities (a 0.3 s Redis read bound may
    fire late); what they record stays recorded, so nothing is lost or repeated.
    `thread` keeps the SDK's default. With the sandbox on, activations always use threads
    (`debug_mode` would relax the sandbox for a debugger).

    `slots` (`AGENTKEEL_CPU_WORKFLOW_SLOTS`, `..._ACTIVITY_SLOTS`, `AGENTKEEL_CPU_SLOT_TUNER`):
    what the worker takes at once (`workers.slots`). A task it has not taken waits in the
    server's backlog, the one place where lanes (`schemas.lanes`) order tasks: slots the
    worker cannot serve promptly take background tasks off the backlog ahead of interactive
    ones.

    `deployment`: its worker deployment version (`workers.versioning`); None: unversioned.

    `held_patches`: patch ids left inactive in the runs this worker starts
    (`AGENTKEEL_HELD_PATCHES`): the SDK asks the callback only for a run's first, not
    replayed, `workflow.patched()` of an id, so histories already marked replay as marked.
    """
    # The served domain is loaded here, outside any sandbox, before a workflow needs it.
    active_domain()
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow, FanOutWorkflow, CacheWarmerWorkflow, *extra_workflows],
        workflow_runner=SandboxedWorkflowRunner() if sandboxed else UnsandboxedWorkflowRunner(),
        activities=activities,
        **slots.worker_options(),
        # Only what inlines activations: deadlock detection off, a breakpoint hook that
        # acts only on breakpoint() inside a workflow. Never with the sandbox (it relaxes it).
        debug_mode=inline_activations and not sandboxed,
        # A task for this worker's cached runs waits this long for it before any worker
        # may take it (10 s by default): a killed worker's runs move on within seconds.
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        deployment_config=deployment,
        patch_activation_callback=holding(frozenset(held_patches)) if held_patches else None,
    )


def holding(held: frozenset[str]) -> Callable[[PatchActivationInput], bool]:
    def activate(patch: PatchActivationInput) -> bool:
        return patch.patch_id not in held

    return activate


def inference_worker(
    client: Client,
    task_queue: str,
    activities: InferenceActivities,
    *,
    max_concurrent: int,
    deployment: WorkerDeploymentConfig | None = None,
) -> Worker:
    """Runs route / plan / join / respond; concurrency matches what the engine batches."""
    return Worker(
        client,
        task_queue=task_queue,
        activities=activities.all(),
        max_concurrent_activities=max_concurrent,
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        deployment_config=deployment,
    )


async def _run_until_signalled(worker: Worker, readiness: Readiness) -> None:
    """Serve until SIGTERM or SIGINT, then drain: polling stops, activities in flight get
    `GRACEFUL_SHUTDOWN` to finish. Ready (`workers.readiness`) only in between."""
    stop = stop_on_signals()
    async with worker:
        readiness.ready = True  # models, caches and indexes were loaded before the worker
        log.info("worker_started", task_queue=worker.task_queue)
        await stop.wait()
        readiness.ready = False
        log.info("worker_stopping", task_queue=worker.task_queue)


def _serve_metrics(settings: Settings, kind: str) -> None:
    """Metrics at the worker's address; traces where the `OTEL_*` variables say."""
    configure_tracing(f"agentkeel-worker-{kind}")
    address = metrics_address(settings, kind)
    if address is None:
        return
    try:
        metrics_runtime(address)
    except StartupError as exc:
        if settings.metrics_address.strip():
            raise  # an address the operator chose: not serving it is an error
        # The default one (a second worker on this host has it): serve runs, say so.
        log.warning("metrics_not_served", reason=str(exc))
        return
    log.info("metrics_served", url=f"http://{address}/metrics")


async def run_cpu_worker(settings: Settings) -> None:
    # Live (not ready) from the start: loading caches and indexes must not look like a hang.
    async with health_endpoint(settings.health_address) as readiness:
        await _cpu_worker(settings, readiness)


async def _cpu_worker(settings: Settings, readiness: Readiness) -> None:
    _serve_metrics(settings, "cpu")
    client = await connect(settings)
    # AgentWorkflow upserts these; without them its workflow tasks would fail.
    await ensure_search_attributes(client, settings.temporal_namespace)

    generations = 0

    @asynccontextmanager
    async def serve(on_mcp_change: Callable[[str], None]) -> AsyncIterator[None]:
        nonlocal generations
        generations += 1
        # Temporal's core takes one worker per task queue per client connection: a next
        # generation, polling beside the one before, has a connection of its own.
        own = client if generations == 1 else await connect(settings)
        # The catalog is installed in here (its MCP servers' tools listed) before anything
        # reads it, the warming schedule included.
        async with cpu_activities(settings, on_mcp_change=on_mcp_change) as activities:
            await ensure_warming_schedule(own, settings)
            worker = cpu_worker(
                own,
                settings.task_queue,
                activities,
                sandboxed=settings.sandboxed_workflows(),
                inline_activations=settings.inline_activations(),
                deployment=deployment_config(settings),
                held_patches=settings.held_patch_ids(),
                slots=cpu_slots(settings),
            )
            async with worker:
                log.info("worker_started", task_queue=worker.task_queue)
                yield
            log.info("worker_stopped", task_queue=worker.task_queue)

    if settings.inline_activations():
        # A changed MCP tool list is served by a next generation beside this one.
        await serve_generations(serve, readiness, stop_on_signals())
        return
    # Activations on threads carry no context for a generation's catalog: restart instead.
    async with serve(restart_for_new_catalog):
        readiness.ready = True
        await stop_on_signals().wait()
        readiness.ready = False


async def run_inference_worker(settings: Settings) -> None:
    """Load the models once, then serve as many model activities as the engine batches.

    A model that cannot be loaded or reached fails here, at start, with the reason;
    workflows never wait on a worker without its model. On SIGTERM the worker stops
    polling, lets activities in flight finish (up to the graceful timeout), then
    releases the engines.
    """
    # Live (not ready) from the start; the catalog (its MCP tools too) is what prompts and
    # the plan schema describe.
    async with health_endpoint(settings.health_address) as readiness:
        # Its prompts and plan schema describe the catalog: a changed tool list is read
        # by its next activities (`follow_catalog`); its models stay loaded.
        def listed(changed: Callable[[str], None]) -> AbstractAsyncContextManager[object]:
            return serve_domain_with_mcp(settings, on_change=changed)

        async with follow_catalog(listed):
            await _inference_worker(settings, readiness)


async def _inference_worker(settings: Settings, readiness: Readiness) -> None:
    assembly = build_policy(settings)
    _serve_metrics(settings, "inference")
    client = await connect(settings)
    async with inference_resources(settings) as resources:
        await assembly.start()
        try:
            activities = InferenceActivities(
                assembly.policy,
                redis=resources.redis,
                conversations=resources.conversations,
                outputs=resources.outputs,
                speculate_calls=speculative_calls(settings),
                forecast=unsure_forecast(settings),
                stream_plans=settings.plan_stream == "on",
                usage=usage_metering(settings, resources.redis),
                model_slots=ModelSlots(
                    resources.redis,
                    settings.model_concurrency,
                    namespace=settings.task_queue,
                    lease_s=RESPOND_TIMEOUT.total_seconds(),
                ),
            )
            worker = inference_worker(
                client,
                settings.inference_task_queue,
                activities,
                max_concurrent=assembly.concurrency,
                deployment=deployment_config(settings),
            )
            log.info(
                "inference_policy",
                policy=assembly.policy.name,
                engines=[e.name for e in assembly.engines],
                max_concurrent=assembly.concurrency,
            )
            await _run_until_signalled(worker, readiness)
        finally:
            await assembly.close()
