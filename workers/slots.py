"""How many tasks the CPU worker takes at once: a fixed count, or as many as the machine's
CPU and memory allow (Temporal's resource-based tuner), up to that count.

Lanes (`schemas.lanes`) order only what waits in the server's backlog. A worker with many
fixed slots takes a background burst in at once, and interactive tasks that arrive after it
queue behind the burst inside the worker, where no priority applies. So the default is a
few workflow tasks (8; the SDK's is 100): a worker's workflow code runs on one event loop,
and more tasks taken at once would only wait there. With `resource`, past
a small floor the worker takes a new workflow task or activity only while the machine's CPU
(and memory) is under the target: more of the burst stays on the server, where interactive
tasks are handed out first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.worker import (
    FixedSizeSlotSupplier,
    ResourceBasedSlotConfig,
    ResourceBasedSlotSupplier,
    ResourceBasedTunerConfig,
    WorkerTuner,
)

from agentkeel.settings.worker_process import SlotTuner, WorkerProcessSettings

MEMORY_TARGET = 0.8
"""The share of the machine's memory past which the resource tuner hands out no new slot
(the SDK advises no more than 0.8)."""
MIN_WORKFLOW_SLOTS = 2
MIN_ACTIVITY_SLOTS = 4
"""A floor handed out whatever the CPU reads, so the worker never stalls entirely; tasks past
it wait while the CPU is over the target."""
SDK_FIXED_SLOTS = 100
"""The SDK's fixed count, kept for the slot kinds the tuner does not size (local activities,
Nexus tasks)."""
ACTIVITY_RAMP = timedelta(milliseconds=10)
"""The wait between new activity slots past the minimum, so the CPU reading can follow
(the SDK's 50 ms paces a burst of 100 ms tools too slowly)."""


@dataclass(frozen=True)
class CpuSlots:
    """The CPU worker's slots: `workflow_tasks` and `activities` are the counts (`fixed`) or
    the ceilings (`resource`: past the floor, taken while the CPU is under `cpu_target`)."""

    workflow_tasks: int
    activities: int
    tuner: SlotTuner
    cpu_target: float

    def worker_options(self) -> dict[str, Any]:
        """The `temporalio.worker.Worker` arguments that set these slots."""
        if self.tuner == "fixed":
            return {
                "max_concurrent_workflow_tasks": self.workflow_tasks,
                "max_concurrent_activities": self.activities,
            }
        resources = ResourceBasedTunerConfig(MEMORY_TARGET, self.cpu_target)
        workflows = ResourceBasedSlotConfig(
            minimum_slots=min(MIN_WORKFLOW_SLOTS, self.workflow_tasks),
            maximum_slots=self.workflow_tasks,
        )
        activities = ResourceBasedSlotConfig(
            minimum_slots=min(MIN_ACTIVITY_SLOTS, self.activities),
            maximum_slots=self.activities,
            ramp_throttle=ACTIVITY_RAMP,
        )
        return {
            "tuner": WorkerTuner.create_composite(
                workflow_supplier=ResourceBasedSlotSupplier(workflows, resources),
                activity_supplier=ResourceBasedSlotSupplier(activities, resources),
                # A run's local activities (its policy, reads, ledger) never reach the
                # server's backlog, so holding them back orders nothing: they only slow the
                # runs already in the worker, interactive ones too. The SDK's fixed count.
                local_activity_supplier=FixedSizeSlotSupplier(SDK_FIXED_SLOTS),
                nexus_supplier=FixedSizeSlotSupplier(SDK_FIXED_SLOTS),
            )
        }


def cpu_slots(settings: WorkerProcessSettings) -> CpuSlots:
    """The CPU worker's slots as `AGENTKEEL_CPU_*_SLOTS` and `AGENTKEEL_CPU_SLOT_*` give them."""
    return CpuSlots(
        workflow_tasks=settings.cpu_workflow_slots,
        activities=settings.cpu_activity_slots,
        tuner=settings.cpu_slot_tuner,
        cpu_target=settings.cpu_slot_target,
    )


DEFAULT_SLOTS = cpu_slots(WorkerProcessSettings())
"""The settings' defaults (`settings.worker_process`): fixed, 8 workflow tasks, 200
activities."""
