"""A run chain names its side effects one way, whichever run of it makes them.

A chain whose first run named effects by the tool alone (recorded before
`effect-identity-v1`) hands that naming on through the memo of each continue-as-new, so an
effect it made, planned again by a continued run, keeps its key and is not made twice. A
chain begun on this release names them by every argument. On the real dev server: each run
of a probe chain asks `names_every_argument` as an effect does, and hands on what it says
it named by (as `AgentWorkflow._hand_on` does), or nothing where it made no effect.
"""

from __future__ import annotations

import uuid

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from agentkeel.workflows.dag.effect_naming import (
    EFFECT_NAMING_MEMO,
    handed_on_memo,
    names_every_argument,
)


@workflow.defn(name="EffectNamingProbe")
class EffectNamingProbe:
    """`hands_on[i]`: how run i says it named its effects on handing on (None: it made no
    effect, so it asks nothing); `"legacy"` stands for a run recorded before the naming
    was asked per chain, which named its effects by the tool. Returns what each run's
    effects were named by, or None for a run that made none."""

    @workflow.run
    async def run(self, hands_on: list[str | None], seen: list[bool | None]) -> list[bool | None]:
        step = hands_on[0] if hands_on else None
        if step is None:
            named = None
        elif step == "legacy":
            named = False
        else:
            named = names_every_argument()
        seen = [*seen, named]
        if not hands_on:
            return seen
        workflow.continue_as_new(args=[hands_on[1:], seen], memo=handed_on_memo(named))


async def _chain(
    client: Client, hands_on: list[str | None]
) -> tuple[list[bool | None], dict[str, object]]:
    queue = f"naming-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client, task_queue=queue, workflows=[EffectNamingProbe],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):  # fmt: skip
        handle = await client.start_workflow(
            EffectNamingProbe.run,
            args=[hands_on, []],
            id=f"naming-{uuid.uuid4().hex[:12]}",
            task_queue=queue,
            memo={"question": "kept"},
        )
        seen = await handle.result()
        memo = await (await client.get_workflow_handle(handle.id).describe()).memo()
    return seen, dict(memo)


async def test_a_chain_begun_now_names_its_effects_by_every_argument(client: Client) -> None:
    seen, memo = await _chain(client, ["effect", None, "effect"])
    assert seen == [True, None, True, None]
    assert memo == {"question": "kept", EFFECT_NAMING_MEMO: "every-argument"}


async def test_a_legacy_chain_keeps_naming_by_the_tool_through_each_continue(
    client: Client,
) -> None:
    # Its first run named by the tool; a run that makes no effect hands the naming on as
    # it got it; a later run's effect is named the same way, so its key is the first's.
    seen, memo = await _chain(client, ["legacy", None, "effect", "effect"])
    assert seen == [False, None, False, False, None]
    assert memo == {"question": "kept", EFFECT_NAMING_MEMO: "tool"}
