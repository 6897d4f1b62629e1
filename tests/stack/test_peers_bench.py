"""`bench.peers`' peers run for real against the token-timed model server, each with its
framework's own levers: every run makes exactly the tool calls of its question, with one
model request per level of its plan (none after the tools), and its tools where the
variant puts them (activities on the task queue, or local activities). A question the
model misreads once (a replan) costs each peer one failed call and one model request more,
its failure handed back to the model the framework's own way.

Speed is not asserted here (that is the benchmark's job); what is, is that no peer is
short-cut or handicapped: a peer that skipped a tool, called one with unresolved
arguments or paid a model turn after its tools would make the benchmark's figures
meaningless.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

pytest.importorskip("pydantic_ai", reason="the bench extra is not installed (pydantic-ai-slim)")
pytest.importorskip("agents", reason="the bench extra is not installed (openai-agents)")
pytest.importorskip(
    "temporalio.openai_agents", reason="the bench extra is not installed (temporalio-openai-agents)"
)

from bench import peer_bare, peer_fakes, peer_openai_agents, peer_pydantic_ai
from bench.ideal_model import IdealShapeModel
from bench.peer_cases import SHAPE_NAMES, Case, case_in, expected_calls
from bench.token_server import SPEEDS, serving
from bench.token_text import Reply

SYSTEMS = {
    "openai-agents": peer_openai_agents,
    "pydantic-ai": peer_pydantic_ai,
    "bare": peer_bare,
}
LEVELS = {"chain": 4, "diamond": 3, "4-wide": 1, "8-wide": 1}
"""A tool-calling peer's model requests per run: one per level of the plan, none after."""
QUEUED_MODEL_CALLS = {"openai-agents": False, "pydantic-ai": True, "bare": True}
"""Whether a peer's model calls are activities on a task queue (OpenAI Agents' are local
activities)."""

RUN_TIMEOUT = timedelta(seconds=30)
"""A broken peer fails its run instead of hanging the test."""


@dataclass
class CountingModel:
    """The ideal model, counting the requests of each bench question."""

    inner: IdealShapeModel = field(default_factory=IdealShapeModel)
    requests: Counter[Case] = field(default_factory=Counter)

    def reply(self, body: dict[str, Any]) -> Reply:
        self.requests[case_in(json.dumps(body.get("messages", [])))] += 1
        return self.inner.reply(body)


@pytest.fixture
def quick_tools() -> Iterator[None]:
    """Tools of 10 ms: the calls matter here, not the time."""
    before = peer_fakes.KNOBS.tool_s
    peer_fakes.KNOBS.tool_s = 0.01
    yield
    peer_fakes.KNOBS.tool_s = before


async def _run_checked(client: Client, system: str, queue: str, case: Case, local: bool) -> None:
    """One run of `case`, checked for its calls and for where its activities ran."""
    kind = "replan" if case.wrong_once else "named" if case.named else "cold"
    workflow_id = f"{queue}-{case.shape}-{kind}"
    module = SYSTEMS[system]
    handle = await client.start_workflow(
        module.RUN, case.question, id=workflow_id, task_queue=queue, execution_timeout=RUN_TIMEOUT
    )
    answer = await handle.result()
    assert isinstance(answer, str) and answer, workflow_id
    peer_fakes.check_calls(case.question, workflow_id)  # raises on a wrong or missing call
    history = await handle.fetch_history()
    queued = sum(
        e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for e in history.events
    )
    model_tasks = _model_requests(system, case) if QUEUED_MODEL_CALLS[system] else 0
    tool_tasks = 0 if local else len(expected_calls(case.question))
    assert queued == model_tasks + tool_tasks, (workflow_id, queued)


def _model_requests(system: str, case: Case) -> int:
    """One plan (two with a replan) for bare; a tool-calling peer one per level of the
    plan, and one more for the misread call it makes again."""
    if system == "bare":
        return 2 if case.wrong_once else 1
    return LEVELS[case.shape] + case.wrong_once


@pytest.mark.usefixtures("quick_tools")
async def test_every_peer_runs_each_shape_at_its_best(temporal_env: WorkflowEnvironment) -> None:
    target = temporal_env.client.service_client.config.target_host
    model = CountingModel()
    runs: list[tuple[str, Case, Client, str, bool]] = []
    async with serving(model, SPEEDS["fast"]) as (url, _), AsyncExitStack() as workers:
        for index, (system, module) in enumerate(SYSTEMS.items()):
            client = await module.client_for(target, temporal_env.client.namespace, url)
            forms = (False, True) if module.LOCAL_TOOLS_SUPPORTED else (False,)
            for local in forms:
                queue = f"peers-{system}-{'local' if local else 'queue'}-{uuid.uuid4().hex[:6]}"
                for worker in module.workers(client, queue, local_tools=local):
                    await workers.enter_async_context(worker)
                n = 1 + 2 * index + local  # a question of its own per variant
                for shape in SHAPE_NAMES:
                    runs += [
                        (system, Case(shape, n, named, wrong_once=wrong), client, queue, local)
                        for named, wrong in ((True, False), (False, False), (True, True))
                    ]
        # Every run to its end, failed or not: a worker shut down under a model call in
        # flight would leave the HTTP client's task behind.
        outcomes = await asyncio.gather(
            *(
                _run_checked(client, system, queue, case, local)
                for system, case, client, queue, local in runs
            ),
            return_exceptions=True,
        )
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    if failures:
        raise failures[0]
    for system, case, *_ in runs:
        assert model.requests[case] == _model_requests(system, case), (system, case)
