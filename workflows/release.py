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

The releases' ids are asked first thing in `AgentWorkflow.run` (`workflow.patched`
memoizes each for the rest of the run); a `FanOutWorkflow` part asks them at its first
`since` (in its first workflow task), where it asked its own change before. A change made
after a release gets its own id, asked through `since` (which falls through to it), until
a later release id gathers it.

Workers of the previous release cannot replay a run that carries `RELEASE_PATCH` (an
unknown marker is a nondeterminism error): roll this release out first with it held
(`AGENTKEEL_HELD_PATCHES=release-2026-12`; `docs/deployment.md`).

`SECOND_RELEASE_PATCH` gathers every change gated after `RELEASE_PATCH` the same way, and
for a reason beyond the events it saves: a change's own id asked right after a local
activity's result (the path cache's lookup, a read run as a local activity) can land, on
the worker that ran it, in the workflow task after the one holding the activity's marker
(the SDK completes a task and starts the next at once, for instance when it heartbeats a
task whose local activities run long). A replay resolves that result in the earlier task,
asks the id before it has seen the marker, takes the old branch and fails the run's
workflow tasks from then on (seen: a run moved to another worker of the next release).
A run begun on the second release asks `SECOND_RELEASE_PATCH` first thing, before any
activity, and no change's own id after it.

`THIRD_RELEASE_PATCH` gathers the second release's changes and the changes made after it
(`THIRD_RELEASE_CHANGES`), which have no id of their own: a run begun on the third
release asks it first thing and no other id; an older run asks it at its start too
(absent: False), so it never takes a later change's branch. A later change joins
`THIRD_RELEASE_CHANGES` only together with a new release id (workers of this release
would take its marker for this release's and run the old branch); until then it asks its
own id at the run's start.

`FOURTH_RELEASE_PATCH` is such a new release id: it stands for everything the third does
and for `FOURTH_RELEASE_CHANGES`, and a run begun on this code asks it first thing instead
of the third's (one marker a run still). A run begun on the third release replays with its
own marker and never takes a fourth-release branch.

`FIFTH_RELEASE_PATCH` does the same for `FIFTH_RELEASE_CHANGES`: a run begun on this code
asks it first thing (one marker a run), and a run begun on the fourth release replays with
the fourth's marker, never taking a fifth-release branch.
"""

from __future__ import annotations

from temporalio import workflow

__all__ = [
    "FIFTH_RELEASE_CHANGES",
    "FIFTH_RELEASE_PATCH",
    "FOURTH_RELEASE_CHANGES",
    "FOURTH_RELEASE_PATCH",
    "RELEASE_PATCH",
    "SECOND_RELEASE_CHANGES",
    "SECOND_RELEASE_PATCH",
    "THIRD_RELEASE_CHANGES",
    "THIRD_RELEASE_PATCH",
    "since",
]

RELEASE_PATCH = "release-2026-12"
"""Stands for `FIRST_RELEASE_CHANGES` (below).

Changes gated after it, gathered by `SECOND_RELEASE_PATCH` (a run recorded before that asked
each id where it took the branch):
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
warm-tenant-fairness-v1 (`workflows.warmer`: asked after a task-queue activity, whose result
always opens a workflow task of its own; not gathered)."""


FIRST_RELEASE_CHANGES = frozenset(
    {
        RELEASE_PATCH,
        "authority-v1",
        "tenant-attribute-v1",
        "local-policy-v1",
        "effect-rules-v1",
        "tool-tenant-v1",
        "fan-out-children-v1",
        "outputs-by-reference-v1",
        "deadline-v1",
        "speculation-v1",
    }
)
"""What `RELEASE_PATCH` stands for (itself included)."""

SECOND_RELEASE_PATCH = "release-2026-12-06"
"""Stands for `FIRST_RELEASE_CHANGES` and every change gated after them up to 2026-12-06."""

SECOND_RELEASE_CHANGES = FIRST_RELEASE_CHANGES | frozenset(
    {
        "early-speculation-v1",
        "speculation-failure-v1",
        "plan-stream-v1",
        "question-attribute-v1",
        "effect-identity-v1",
        "effect-identity-v2",
        "effect-identity-v3",
        "provenance-asked-v1",
        "provenance-asked-v2",
        "provenance-asked-v3",
        "claim-release-v1",
        "claim-cancel-v1",
        "claim-cancel-v2",
        "authorize-before-claim-v1",
        "roles-before-claim-v1",
        "roles-in-claim-v1",
        "approval-cancel-record-v1",
        "watch-quota-v1",
        "replan-ahead-v1",
        "replan-patch-v1",
        "policy-offer-v1",
        "run-budget-v1",
        "budget-routes-first-v1",
    }
)
"""What `SECOND_RELEASE_PATCH` stands for. A change gated after it is not in here: it asks
its own id (`since` falls through to it), at the run's start or where no local activity's
result can precede it in the same workflow task, until a later release gathers it."""


THIRD_RELEASE_PATCH = "release-2026-12-07"
"""Stands for `SECOND_RELEASE_CHANGES` and `THIRD_RELEASE_CHANGES`."""

THIRD_RELEASE_CHANGES = frozenset({"provenance-asked-v4"})
"""Changes made after `SECOND_RELEASE_PATCH` that have no marker of their own: only a run
begun on the third release or a later one takes their branches. A run begun before it
never does, even where it goes on (rather than replays) on this code, so none of them is
asked after a local activity's result (`since` asks only the releases' ids for them, at
the run's start: the latest's, then, where that is absent or held, each earlier one's)."""


FOURTH_RELEASE_PATCH = "release-2026-12-07b"
"""Stands for what `THIRD_RELEASE_PATCH` does and `FOURTH_RELEASE_CHANGES`."""

FOURTH_RELEASE_CHANGES = frozenset({"given-reads-v1"})
"""Changes made after `THIRD_RELEASE_PATCH`, with no marker of their own (as the third's)."""


FIFTH_RELEASE_PATCH = "release-2026-12-08"
"""Stands for what `FOURTH_RELEASE_PATCH` does and `FIFTH_RELEASE_CHANGES`."""

FIFTH_RELEASE_CHANGES = frozenset({"local-speculation-v1"})
"""Changes made after `FOURTH_RELEASE_PATCH`, with no marker of their own (as the third's)."""


def since(change: str) -> bool:
    """Whether this run takes the branch of `change`: always for a run begun on a release
    that gathers it; for an older run, as its history's markers say (the release that
    gathered `change`, else `change`'s own)."""
    if change in FIFTH_RELEASE_CHANGES:
        return workflow.patched(FIFTH_RELEASE_PATCH)
    earlier = (
        change in FOURTH_RELEASE_CHANGES
        or change in THIRD_RELEASE_CHANGES
        or change in SECOND_RELEASE_CHANGES
    )
    if earlier and workflow.patched(FIFTH_RELEASE_PATCH):
        return True
    if change in FOURTH_RELEASE_CHANGES:
        return workflow.patched(FOURTH_RELEASE_PATCH)
    third = change in THIRD_RELEASE_CHANGES or change in SECOND_RELEASE_CHANGES
    if third and workflow.patched(FOURTH_RELEASE_PATCH):
        return True
    if change in THIRD_RELEASE_CHANGES:
        return workflow.patched(THIRD_RELEASE_PATCH)
    if change in SECOND_RELEASE_CHANGES and workflow.patched(THIRD_RELEASE_PATCH):
        return True
    if change in SECOND_RELEASE_CHANGES and workflow.patched(SECOND_RELEASE_PATCH):
        return True
    if change in FIRST_RELEASE_CHANGES and workflow.patched(RELEASE_PATCH):
        return True
    return workflow.patched(change)
