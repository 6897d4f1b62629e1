"""Lanes: which priority and fairness key a run starts with (`schemas.lanes`)."""

from __future__ import annotations

from temporalio.client import ScheduleActionStartWorkflow

from agentkeel.cli.stack.temporal import queue_poll_flags
from agentkeel.schemas.lanes import LANE_PRIORITY_KEYS, Lane, lane_of, run_priority
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.settings.model import Settings
from agentkeel.workers.warming_schedule import warming_schedule


def test_interactive_goes_before_overflow_before_automations_before_the_warmer() -> None:
    order = (Lane.INTERACTIVE, Lane.OVERFLOW, Lane.AUTOMATION, Lane.WARMING)
    keys = [LANE_PRIORITY_KEYS[lane] for lane in order]
    assert keys == sorted(keys) and len(set(keys)) == len(Lane)
    assert all(1 <= key <= 5 for key in keys), "within the server's default five levels"


def test_a_watch_is_an_automation_and_a_question_is_interactive() -> None:
    assert lane_of(AgentRequest(question="Where is order 1001?")) is Lane.INTERACTIVE
    watch = AgentRequest(question="Tell me when it ships", options=RunOptions(watch_every_s=60))
    assert lane_of(watch) is Lane.AUTOMATION
    plan = Plan.model_validate(
        {
            "steps": [
                {
                    "id": "s1",
                    "tool": "get_order",
                    "args": {"order_id": 1001},
                    "repeat": {"until": {"ref": "$s1.status", "in": ["shipped"]}},
                }
            ]
        }
    )
    assert lane_of(AgentRequest(question="Watch order 1001", plan=plan)) is Lane.AUTOMATION


def test_the_tenant_is_the_fairness_key() -> None:
    priority = run_priority(Lane.INTERACTIVE, "acme")
    assert (priority.priority_key, priority.fairness_key) == (1, "acme")


def test_the_warmer_schedule_starts_in_the_warming_lane_unless_lanes_are_off() -> None:
    on = warming_schedule(Settings(warm_every_s=300)).action
    assert isinstance(on, ScheduleActionStartWorkflow)
    assert on.priority.priority_key == LANE_PRIORITY_KEYS[Lane.WARMING]
    off = warming_schedule(Settings(warm_every_s=300, priority_lanes=False)).action
    assert isinstance(off, ScheduleActionStartWorkflow)
    assert off.priority.priority_key is None and off.priority.fairness_key is None


def test_every_dev_server_agentkeel_starts_counts_fairness_keys() -> None:
    flags = queue_poll_flags()
    assert "matching.enableFairness=true" in flags
