"""The CPU worker's slots: fixed counts, or Temporal's resource-based tuner under ceilings."""

from __future__ import annotations

from temporalio.worker import FixedSizeSlotSupplier, ResourceBasedSlotSupplier, WorkerTuner

from agentkeel.settings.model import Settings
from agentkeel.workers.slots import MEMORY_TARGET, SDK_FIXED_SLOTS, CpuSlots, cpu_slots
from tests.unit.test_settings import refused


def test_fixed_slots_are_the_workers_maximum_counts() -> None:
    options = CpuSlots(
        workflow_tasks=8, activities=16, tuner="fixed", cpu_target=0.8
    ).worker_options()
    assert options == {"max_concurrent_workflow_tasks": 8, "max_concurrent_activities": 16}


def test_resource_slots_are_taken_under_the_cpu_target_up_to_the_counts() -> None:
    options = CpuSlots(workflow_tasks=8, activities=16, tuner="resource", cpu_target=0.6)
    tuner = options.worker_options()["tuner"]
    assert isinstance(tuner, WorkerTuner)
    # The Worker refuses a tuner beside maximum counts: only the tuner is passed.
    assert set(options.worker_options()) == {"tuner"}
    workflow = tuner._get_workflow_task_slot_supplier()
    activity = tuner._get_activity_task_slot_supplier()
    local = tuner._get_local_activity_task_slot_supplier()
    # Local activities never wait in the server's backlog: holding them back orders nothing.
    assert isinstance(local, FixedSizeSlotSupplier) and local.num_slots == SDK_FIXED_SLOTS
    for supplier, ceiling in ((workflow, 8), (activity, 16)):
        assert isinstance(supplier, ResourceBasedSlotSupplier)
        assert supplier.slot_config.maximum_slots == ceiling
        assert supplier.tuner_config.target_cpu_usage == 0.6
        assert supplier.tuner_config.target_memory_usage == MEMORY_TARGET
    assert isinstance(activity, ResourceBasedSlotSupplier)
    assert activity.slot_config.minimum_slots is not None
    assert 1 <= activity.slot_config.minimum_slots <= 16


def test_the_settings_give_the_tuner_and_refuse_a_target_past_one() -> None:
    slots = cpu_slots(
        Settings.from_env(
            {"AGENTKEEL_CPU_SLOT_TUNER": "resource", "AGENTKEEL_CPU_SLOT_TARGET": "0.7"}
        )
    )
    assert (slots.tuner, slots.cpu_target, slots.workflow_tasks) == ("resource", 0.7, 8)
    assert "AGENTKEEL_CPU_SLOT_TARGET" in refused(CPU_SLOT_TARGET="1.5")
    assert "AGENTKEEL_CPU_SLOT_TARGET" in refused(CPU_SLOT_TARGET="0")
    assert "AGENTKEEL_CPU_SLOT_TUNER" in refused(CPU_SLOT_TUNER="elastic")
