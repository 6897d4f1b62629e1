"""The settings of a release and its rollout: worker versioning, held patches, the loop.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>` like the rest),
kept apart because they concern how a deployment moves from one release to the next, not
what a run does.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, field_validator, model_validator

from agentkeel.settings.env import setting_error
from agentkeel.settings.event_loop import EventLoop, chosen_loop
from agentkeel.settings.types import MODEL_CONFIG

__all__ = ["RolloutSettings"]


class RolloutSettings(BaseModel):
    """Worker versioning, the patches held back in a rollout, and the event loop."""

    model_config = MODEL_CONFIG

    worker_deployment: str = ""
    """Temporal worker versioning, opt in: the worker deployment's name (one for the CPU and
    inference workers of a deployment). Empty: unversioned workers. Set, with
    `AGENTKEEL_WORKER_BUILD_ID`, each release's workers poll as their own version, and new
    runs go to the version made current (`temporal worker deployment set-current-version`)."""
    worker_build_id: str = ""
    """The release's build id (an image tag, a commit), with `AGENTKEEL_WORKER_DEPLOYMENT`."""
    worker_versioning: Literal["auto_upgrade", "pinned"] = "auto_upgrade"
    """With a deployment: `auto_upgrade`, a run moves to the current version at its next
    workflow task (workflow changes gated by `workflow.patched`, as without versioning), or
    `pinned`, a run stays on the version that started it (keep that version's workers
    until its runs end: approvals may wait days)."""
    held_patches: str = ""
    """Patch ids (comma-separated, e.g. `release-2026-12-08`) that CPU workers leave inactive
    in the runs they start: such a run takes the code's old branch and records no marker
    for them, so workers of the previous release can still replay it. Roll a release out
    with its new patch ids held, and drop this once no worker of the previous release is
    left (`docs/deployment.md`). Runs that already carry a marker replay by it, whatever
    this says."""
    event_loop: EventLoop = "asyncio"
    """The event loop of every process: `asyncio` (the standard library's), `uvloop`
    (libuv, where installed: no measurable gain in `bench.load`, `docs/benchmarks.md`), or
    `auto` (uvloop where it is installed)."""

    @field_validator("event_loop", mode="after")
    @classmethod
    def _event_loop_installed(cls, choice: EventLoop) -> EventLoop:
        chosen_loop(choice)
        return choice

    def held_patch_ids(self) -> frozenset[str]:
        """`held_patches`, read."""
        return frozenset(p.strip() for p in self.held_patches.split(",") if p.strip())

    @model_validator(mode="after")
    def _deployment(self) -> Self:
        if bool(self.worker_deployment) != bool(self.worker_build_id):
            raise setting_error(
                "AGENTKEEL_WORKER_DEPLOYMENT and AGENTKEEL_WORKER_BUILD_ID must be set "
                "together (Temporal worker versioning)"
            )
        return self
