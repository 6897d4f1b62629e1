"""The settings of a worker process itself: where it serves metrics and health, and how the
CPU worker runs workflow code and the rules policy.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`), kept apart because
they shape the worker as a process (probes, sandbox, activations), not what a run does.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agentkeel.settings.types import MODEL_CONFIG, AtLeastOne, MetricsAddress, OnOff

__all__ = ["SlotTuner", "WorkerProcessSettings"]

SlotTuner = Literal["fixed", "resource"]
"""How the CPU worker sizes its slots (`workers.slots`)."""


class WorkerProcessSettings(BaseModel):
    """Metrics and health addresses, the workflow sandbox and activations, the local policy."""

    model_config = MODEL_CONFIG

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
    local_policy: Literal["auto", "on", "off"] = "auto"
    """`auto`: where no model is configured (the rules policy), the CPU worker routes,
    plans and answers itself as local activities, without a hop to the inference queue;
    `on`: it does so with the model tiers too, calling each model server over HTTP from
    the CPU worker (an in-process vLLM tier stops the worker: only the inference pool
    hosts one). Each step then costs no task-queue round trip and no workflow task of its
    own, but a planner's reads start only once its plan is whole (no early reads from the
    stream), a model call under way when the CPU worker dies is made again, the step holds
    a workflow-task slot while it runs (raise `AGENTKEEL_CPU_WORKFLOW_SLOTS` by the model
    steps in flight), and the run's signals and queries wait for it. The worker starts
    only once its model servers answer. Keep an inference pool polling until every CPU
    worker runs with `on`: a worker without it sends the steps there. For model servers
    that answer quickly; `off`: every policy step goes to the inference pool."""

    cpu_workflow_slots: AtLeastOne = 8
    """Workflow tasks the CPU worker takes at once. Tasks it has not taken wait in
    Temporal's backlog, where lanes order them (interactive first, `schemas.lanes`). Its
    workflow code runs on one event loop whatever the cores, so more taken at once only
    queue inside the worker, past the lanes. A task holds its slot while its local
    activities (cache, ledger, records) run: raise it where the Temporal server is far or
    those stores slow (about the workflow tasks a second it serves times the time each
    holds its slot)."""
    cpu_activity_slots: AtLeastOne = 200
    """Activities (tools, cache, run records) the CPU worker takes at once; past it they
    wait in Temporal's backlog, in lane order. The DB pool bounds the tools anyway."""
    cpu_slot_tuner: SlotTuner = "fixed"
    """`fixed`: the CPU worker takes up to the slots above at once; `resource`: past a floor
    of 2 workflow tasks and 4 activities, it takes a new one only while the machine's CPU is
    under `AGENTKEEL_CPU_SLOT_TARGET` and its memory under 80 % (the slots above are then
    ceilings), so more of a background burst waits in Temporal's backlog, where lanes hand
    interactive tasks out first (`workers.slots`)."""
    cpu_slot_target: Annotated[float, Field(gt=0, le=1)] = 0.8
    """With `AGENTKEEL_CPU_SLOT_TUNER=resource`: the share of the CPU past which the worker
    takes no new task."""

    def sandboxed_workflows(self) -> bool:
        """`workflow_sandbox` read: whether the CPU worker runs workflows in the sandbox."""
        return self.workflow_sandbox == "on"

    def inline_activations(self) -> bool:
        """`workflow_activations` read: whether activations run on the worker's loop."""
        return self.workflow_activations == "inline" and not self.sandboxed_workflows()
