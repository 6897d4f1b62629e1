"""What a release records when its patch ids are held (`AGENTKEEL_HELD_PATCHES`), on the
real stack: the markers the previous releases' code asks for, so their workers can replay
the run during an unversioned rollout (`docs/deployment.md`)."""

from __future__ import annotations

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agentkeel.schemas.search_attributes import AGENT_QUESTION
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workflows.agent import AgentWorkflow
from agentkeel.workflows.fan_out_part import FanOutWorkflow
from agentkeel.workflows.nodes.cache_lookup import POLICY_OFFER_PATCH
from agentkeel.workflows.release import (
    FIFTH_RELEASE_PATCH,
    FOURTH_RELEASE_PATCH,
    RELEASE_PATCH,
    SECOND_RELEASE_PATCH,
    THIRD_RELEASE_PATCH,
)
from agentkeel.workflows.visibility import QUESTION_ATTRIBUTE_PATCH
from tests.support.agent_stack import StackFactory
from tests.support.history import _marked


async def test_held_release_patches_record_what_the_previous_releases_recorded(
    make_stack: StackFactory,
) -> None:
    """Rolled out with a release's id held (`AGENTKEEL_HELD_PATCHES`), a new run records the
    markers the previous release's code asks for (so its workers can replay it), and replays
    on this code too; without, it records this release's one marker."""
    question = "Where is order 1001?"
    replayer = Replayer(workflows=[AgentWorkflow, FanOutWorkflow], plugins=agentkeel_plugins())

    async def recorded(held: str = "") -> WorkflowHistory:
        stack = await make_stack(held_patches=held) if held else await make_stack()
        handle = await stack.start(question, options={"use_cache": False})
        await handle.result()
        history = await handle.fetch_history()
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure
        shown = (await handle.describe()).typed_search_attributes.get(AGENT_QUESTION)
        assert shown == (question if QUESTION_ATTRIBUTE_PATCH not in held else None)
        return history

    # Every release's id and the changes gated between them, held: what the code before
    # `release-2026-12` recorded for this run (git 04c2bfd).
    every_run = f"{RELEASE_PATCH},{QUESTION_ATTRIBUTE_PATCH},{POLICY_OFFER_PATCH}"
    later = (
        f"{FIFTH_RELEASE_PATCH},{FOURTH_RELEASE_PATCH},{THIRD_RELEASE_PATCH},{SECOND_RELEASE_PATCH}"
    )
    first = await recorded(f"{later},{every_run}")
    previous = ["authority-v1", "tenant-attribute-v1", "local-policy-v1", "effect-rules-v1"]
    assert _marked(first) == [*previous, "tool-tenant-v1"]
    # The later ids held: what `release-2026-12` recorded; the third's and the fourth's:
    # `-12-06`'s; the fourth's: the third's.
    second = await recorded(later)
    assert _marked(second) == [RELEASE_PATCH, QUESTION_ATTRIBUTE_PATCH, POLICY_OFFER_PATCH]
    third_held = f"{FIFTH_RELEASE_PATCH},{FOURTH_RELEASE_PATCH},{THIRD_RELEASE_PATCH}"
    assert _marked(await recorded(third_held)) == [SECOND_RELEASE_PATCH]
    fourth_held = f"{FIFTH_RELEASE_PATCH},{FOURTH_RELEASE_PATCH}"
    assert _marked(await recorded(fourth_held)) == [THIRD_RELEASE_PATCH]
    assert _marked(await recorded(FIFTH_RELEASE_PATCH)) == [FOURTH_RELEASE_PATCH]
    assert _marked(await recorded()) == [FIFTH_RELEASE_PATCH]
