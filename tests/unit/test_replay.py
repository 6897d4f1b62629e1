"""Recorded histories must replay with the current code, so a change can't break runs in flight.

The histories (`tests/histories/`) are recorded by `tests/stack/test_record_histories.py`:
the top-level files before `release-2026-12` (one marker per change), the folder's after it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow
from agentkeel.workflows.budget import RUN_BUDGET_PATCH
from agentkeel.workflows.fan_out_part import FanOutWorkflow
from agentkeel.workflows.nodes.cache_lookup import POLICY_OFFER_PATCH
from agentkeel.workflows.overflow_gate import OVERFLOW_GATE_PATCH
from agentkeel.workflows.plan_stream import PLAN_STREAM_PATCH
from agentkeel.workflows.release import (
    FIFTH_RELEASE_CHANGES,
    FIFTH_RELEASE_PATCH,
    FOURTH_RELEASE_CHANGES,
    FOURTH_RELEASE_PATCH,
    RELEASE_PATCH,
    SECOND_RELEASE_CHANGES,
    SECOND_RELEASE_PATCH,
    THIRD_RELEASE_CHANGES,
    THIRD_RELEASE_PATCH,
)
from agentkeel.workflows.speculation import EARLY_SPECULATION_PATCH
from agentkeel.workflows.visibility import QUESTION_ATTRIBUTE_PATCH
from tests.support.history import _marked
from tests.support.paths import HISTORIES


def _recorded() -> list[Path]:
    return sorted(HISTORIES.rglob("*.json"))


def _patch_ids(path: Path) -> list[str]:
    """The patch ids a recorded history's markers hold, in order."""
    return _marked(WorkflowHistory.from_json(path.stem, path.read_text()))


def test_histories_are_committed() -> None:
    before = sorted(HISTORIES.glob("*.json"))
    after = sorted((HISTORIES / RELEASE_PATCH).glob("*.json"))
    assert len(before) >= 22, "recorded histories of earlier code are missing"
    assert len(after) >= 21, f"histories recorded under {RELEASE_PATCH} are missing"
    second = sorted((HISTORIES / SECOND_RELEASE_PATCH).glob("*.json"))
    assert len(second) >= 28, f"histories recorded under {SECOND_RELEASE_PATCH} are missing"
    third = sorted((HISTORIES / THIRD_RELEASE_PATCH).glob("*.json"))
    assert len(third) >= 28, f"histories recorded under {THIRD_RELEASE_PATCH} are missing"
    fourth = sorted((HISTORIES / FOURTH_RELEASE_PATCH).glob("*.json"))
    assert len(fourth) >= 28, f"histories recorded under {FOURTH_RELEASE_PATCH} are missing"
    fifth = sorted((HISTORIES / FIFTH_RELEASE_PATCH).glob("*.json"))
    assert len(fifth) >= 28, f"histories recorded under {FIFTH_RELEASE_PATCH} are missing"


@pytest.mark.parametrize(
    "release",
    [SECOND_RELEASE_PATCH, THIRD_RELEASE_PATCH, FOURTH_RELEASE_PATCH, FIFTH_RELEASE_PATCH],
)
def test_runs_of_the_later_releases_ask_one_id_before_any_activity(release: str) -> None:
    """A run begun on the second release or a later one asks one patch id, in its first
    workflow task, before any local activity: no later workflow task holds a marker whose
    absence a replay could misread (`workflows.release` says how that failed a run's
    replay)."""
    for path in sorted((HISTORIES / release).glob("*.json")):
        assert _patch_ids(path) == [release], path.name
        history = WorkflowHistory.from_json(path.stem, path.read_text())
        markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
        patch = markers[0].marker_recorded_event_attributes
        assert patch.marker_name == "core_patch", path.name
        first_task_done = next(
            e.event_id
            for e in history.events
            if e.HasField("workflow_task_completed_event_attributes")
        )
        assert patch.workflow_task_completed_event_id == first_task_done, path.name


def test_overflow_runs_ask_the_gates_id_at_their_start() -> None:
    """An overflow run asks `overflow-gate-v1` right after the release's id, in its first
    workflow task, before any local activity (`workflows.overflow_gate`); both recorded
    runs, the one that held its slot at once and the one that waited, replay (below)."""
    recorded = sorted((HISTORIES / OVERFLOW_GATE_PATCH).glob("*.json"))
    assert [p.stem for p in recorded] == ["overflow_held", "overflow_waited"]
    for path in recorded:
        assert _patch_ids(path) == [THIRD_RELEASE_PATCH, OVERFLOW_GATE_PATCH], path.name
        history = WorkflowHistory.from_json(path.stem, path.read_text())
        first_task_done = next(
            e.event_id
            for e in history.events
            if e.HasField("workflow_task_completed_event_attributes")
        )
        markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
        assert [
            m.marker_recorded_event_attributes.workflow_task_completed_event_id for m in markers[:2]
        ] == [first_task_done] * 2


def test_runs_of_this_release_record_one_patch_marker() -> None:
    """Every run (and fan-out part) begun on this release asks one patch id, the release's;
    the runs recorded before it asked one per change they went through."""
    for path in sorted((HISTORIES / RELEASE_PATCH).glob("*.json")):
        assert _patch_ids(path) == [RELEASE_PATCH], path.name
    assert len(_patch_ids(HISTORIES / "local_policy_confident.json")) == 3


def test_runs_of_a_later_change_record_the_release_and_their_own_marker() -> None:
    """A change gated after the release (`early-speculation-v1`, `plan-stream-v1`,
    `run-budget-v1`; `policy-offer-v1` too, asked by every run at its start) asks its own
    id, the others only in runs that take their branch: its histories have the release's
    marker and its own."""
    # (Recorded after `question-attribute-v1`, which every run asks, a run has its marker too.)
    later = (
        (EARLY_SPECULATION_PATCH, 2, [RELEASE_PATCH]),
        (PLAN_STREAM_PATCH, 1, [RELEASE_PATCH]),
        (RUN_BUDGET_PATCH, 1, [RELEASE_PATCH, QUESTION_ATTRIBUTE_PATCH]),
        (POLICY_OFFER_PATCH, 1, [RELEASE_PATCH, QUESTION_ATTRIBUTE_PATCH]),
    )
    for change, runs, before in later:
        recorded = sorted((HISTORIES / change).glob("*.json"))
        assert len(recorded) >= runs, change
        for path in recorded:
            assert _patch_ids(path) == [*before, change], path.name


@pytest.mark.parametrize(
    "path", _recorded(), ids=lambda p: str(p.relative_to(HISTORIES).with_suffix(""))
)
async def test_recorded_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, await asyncio.to_thread(path.read_text))
    # In the sandbox, whatever the workers run with: a clock, random or I/O read in workflow
    # code fails here (`workers.worker.cpu_worker` says why production runs without it).
    replayer = Replayer(
        workflows=[AgentWorkflow, FanOutWorkflow],
        plugins=agentkeel_plugins(),
        workflow_runner=SandboxedWorkflowRunner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_the_releases_gather_real_patch_ids() -> None:
    """Every id a release stands for is one the workflow code gates a change with (a
    misspelt one would leave that change's own marker asked); every change is gathered by
    a release but the warmer's."""
    defined = {
        match.group(1)
        for path in (HISTORIES.parent.parent / "workflows").rglob("*.py")
        for match in re.finditer(r'^\w+_PATCH = "([\w.-]+)"', path.read_text(), re.MULTILINE)
    }
    gathered = (
        SECOND_RELEASE_CHANGES | THIRD_RELEASE_CHANGES | FOURTH_RELEASE_CHANGES
    ) | FIFTH_RELEASE_CHANGES
    assert gathered <= defined, gathered - defined
    assert not SECOND_RELEASE_CHANGES & THIRD_RELEASE_CHANGES
    assert not (SECOND_RELEASE_CHANGES | THIRD_RELEASE_CHANGES) & FOURTH_RELEASE_CHANGES
    earlier = SECOND_RELEASE_CHANGES | THIRD_RELEASE_CHANGES | FOURTH_RELEASE_CHANGES
    assert not earlier & FIFTH_RELEASE_CHANGES
    ungathered = {
        SECOND_RELEASE_PATCH,
        THIRD_RELEASE_PATCH,
        FOURTH_RELEASE_PATCH,
        FIFTH_RELEASE_PATCH,
        "warm-tenant-fairness-v1",
        OVERFLOW_GATE_PATCH,  # asked at the run's start, by overflow runs only
    }
    assert defined - gathered == ungathered, "a later change: list it here"
