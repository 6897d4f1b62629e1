"""One patch marker per run for every change up to this release, instead of one per change.

Each behaviour change of a workflow is gated by its own `workflow.patched()` id, so runs
recorded before it replay on the old branch. Each id a run asks costs it a marker event
and an upsert of `TemporalChangeVersion` (a visibility write on the server, in the same
workflow task): five of each per run by this release, ten of a plain run's 23 events. A
run that starts on this code records one id instead, `RELEASE_PATCH`, which stands for
every change gated before it: `since(change)` is true for such a run without asking
`change`. A history recorded before the release holds no `RELEASE_PATCH` marker, so on
replay `since` falls back to each change's own marker, exactly as that run was recorded
(`tests/unit/test_replay.py` replays both kinds).

`RELEASE_PATCH` is asked first thing in `AgentWorkflow.run` (`workflow.patched` memoizes
it for the rest of the run); a `FanOutWorkflow` part asks it at its first `since`, where
it asked its own change before. A change made after this release gets its own id and a
plain `workflow.patched()`, until a later release id gathers it.

Workers of the previous release cannot replay a run that carries `RELEASE_PATCH` (an
unknown marker is a nondeterminism error): roll this release out first with it held
(`AGENTKEEL_HELD_PATCHES=release-2026-12`; `docs/deployment.md`).
"""

from __future__ import annotations

from temporalio import workflow

__all__ = ["RELEASE_PATCH", "since"]

RELEASE_PATCH = "release-2026-12"
"""Stands for: authority-v1, tenant-attribute-v1, local-policy-v1, effect-rules-v1,
tool-tenant-v1, fan-out-children-v1, outputs-by-reference-v1, deadline-v1, speculation-v1.

Changes gated after it, each asking its own id where a run takes its branch:
early-speculation-v1 and speculation-failure-v1 (`workflows.speculation`), plan-stream-v1
(`workflows.plan_stream`), question-attribute-v1 (`workflows.visibility`),
effect-identity-v1 and effect-identity-v2 (`workflows.dag.effect_naming`: asked at a run's
first effect), effect-identity-v3 (the same: asked only at an effect whose name would spell
a value that does not read back as itself), provenance-asked-v1, provenance-asked-v2,
provenance-asked-v3, claim-release-v1, claim-cancel-v1, claim-cancel-v2,
authorize-before-claim-v1, roles-before-claim-v1, roles-in-claim-v1
(`workflows.dag.effect_gate` and the plan checks), approval-cancel-record-v1
(`workflows.approvals`), watch-quota-v1 (`workflows.dag.watch_slot`), replan-ahead-v1
(`workflows.nodes.join`), replan-patch-v1 (`workflows.dag.plan_patch`), policy-offer-v1
(`workflows.nodes.cache_lookup`: asked by every run at its start), run-budget-v1
(`workflows.budget`: asked only by a run with `options.budget`), budget-routes-first-v1
(`workflows.nodes.model_calls`: the same); in `CacheWarmerWorkflow`,
warm-tenant-fairness-v1 (`workflows.warmer`)."""


def since(change: str) -> bool:
    """Whether this run takes the branch of `change`: always for a run begun on this
    release; for an older run, as its history's marker for `change` says."""
    return workflow.patched(RELEASE_PATCH) or workflow.patched(change)
