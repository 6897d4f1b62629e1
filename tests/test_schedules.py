"""Recurring questions: `agentkeel schedule` makes ordinary Temporal Schedules of AgentWorkflow."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import (
    Client,
    ScheduleActionExecutionStartWorkflow,
    ScheduleDescription,
)
from temporalio.service import RPCError, RPCStatusCode

import agentkeel.cli.main
from agentkeel.client.schedule_timing import (
    ScheduleError,
    Timing,
    format_every,
    parse_every,
)
from agentkeel.client.schedules import (
    WORKFLOW_ID_PREFIX,
    create_schedule,
    delete_schedule,
    derived_schedule_id,
    list_schedules,
    pause_schedule,
    scheduled_request,
)
from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.schemas.result import AgentResult
from tests.support.agent_stack import AgentStack

QUESTION = "Where is order 1001?"
ANN = Actor(role="staff", name="ann")


def _unique_id() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def schedule_ids(client: Client) -> AsyncIterator[list[str]]:
    """Ids a test creates: at teardown each is deleted and the runs it started terminated.

    Request it after `stack`, so this teardown runs while the stack's workers still do.
    """
    ids: list[str] = []
    yield ids
    for schedule_id in ids:
        handle = client.get_schedule_handle(schedule_id)
        try:
            running = (await handle.describe()).info.running_actions
            await handle.delete()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            continue
        for action in running:
            assert isinstance(action, ScheduleActionExecutionStartWorkflow)
            try:
                await client.get_workflow_handle(action.workflow_id).terminate("test teardown")
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise


async def _until(
    probe: Callable[[], Awaitable[ScheduleDescription]],
    ready: Callable[[ScheduleDescription], bool],
    *,
    timeout_s: float = 10,
) -> ScheduleDescription:
    deadline = time.monotonic() + timeout_s
    while True:
        found = await probe()
        if ready(found) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


async def _exists(client: Client, schedule_id: str) -> bool:
    try:
        await client.get_schedule_handle(schedule_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def test_a_schedule_runs_the_question_for_its_tenant_and_actor_until_paused(
    client: Client, stack: AgentStack, schedule_ids: list[str]
) -> None:
    request = scheduled_request(QUESTION, tenant=stack.tenant, actor=ANN)
    schedule_id = await create_schedule(
        client, request, Timing.parse(every="1s"), task_queue=stack.task_queue
    )
    schedule_ids.append(schedule_id)
    assert schedule_id == derived_schedule_id(request)
    assert schedule_id.startswith("where-is-order-1001-")
    handle = client.get_schedule_handle(schedule_id)

    fired = await _until(handle.describe, lambda d: bool(d.info.recent_actions))
    first = fired.info.recent_actions[0].action
    assert isinstance(first, ScheduleActionExecutionStartWorkflow)
    assert first.workflow_id.startswith(f"{WORKFLOW_ID_PREFIX}{schedule_id}-")
    run = client.get_workflow_handle(first.workflow_id, result_type=AgentResult)
    result = await asyncio.wait_for(run.result(), timeout=15)
    assert "1001" in result.answer

    history = await run.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.workflow_type.name == AGENT_WORKFLOW
    [given] = await client.data_converter.decode(started.input.payloads)
    assert given["question"] == QUESTION
    assert given["tenant"] == stack.tenant
    assert Actor.model_validate(given["actor"]) == ANN

    [listed] = [s for s in await list_schedules(client) if s.id == schedule_id]
    assert (listed.paused, listed.every, listed.question) == (False, "1s", QUESTION)
    assert (listed.tenant, listed.actor) == (stack.tenant, ANN)
    assert listed.next_run is not None

    await pause_schedule(client, schedule_id, "quiet, please")
    paused = await _until(handle.describe, lambda d: d.schedule.state.paused)
    assert paused.schedule.state.paused
    assert paused.schedule.state.note == "quiet, please"
    [listed] = [s for s in await list_schedules(client) if s.id == schedule_id]
    assert listed.paused and listed.next_run is None
    await asyncio.sleep(2.2)  # two due times pass
    assert (await handle.describe()).info.num_actions == paused.info.num_actions
    for going in paused.info.running_actions:  # started before the pause: they finish
        assert isinstance(going, ScheduleActionExecutionStartWorkflow)
        await asyncio.wait_for(client.get_workflow_handle(going.workflow_id).result(), 15)

    await delete_schedule(client, schedule_id)
    assert not await _exists(client, schedule_id)
    assert schedule_id not in {s.id for s in await list_schedules(client)}
    with pytest.raises(ScheduleError, match="no schedule"):
        await delete_schedule(client, schedule_id)


@pytest.mark.parametrize("every", ["", "soon", "0s", "500ms", "1.5h", "1m1h", "-1m", "400d"])
def test_a_bad_interval_is_refused_naming_it(every: str) -> None:
    with pytest.raises(ScheduleError, match="--every") as refused:
        Timing.parse(every=every)
    assert repr(every) in str(refused.value)


def test_intervals_read_and_print_alike() -> None:
    for text, seconds in (("30s", 30), ("15m", 900), ("1h", 3600), ("1d", 86400)):
        assert parse_every(text).total_seconds() == seconds
        assert format_every(parse_every(text)) == text
    assert parse_every(" 1H30m ").total_seconds() == 5400
    assert format_every(parse_every("1d1h30m5s")) == "1d1h30m5s"


async def test_a_bad_request_or_cron_creates_nothing(client: Client) -> None:
    with pytest.raises(ScheduleError, match="question"):
        scheduled_request("   ", tenant="default", actor=SYSTEM_ACTOR)
    with pytest.raises(ScheduleError, match="tenant"):
        scheduled_request(QUESTION, tenant="no spaces allowed", actor=SYSTEM_ACTOR)

    request = scheduled_request(QUESTION, tenant=f"t{uuid.uuid4().hex[:8]}", actor=ANN)
    with pytest.raises(ScheduleError, match=r"--cron '61 \* \* \* \*' is not valid: Minute"):
        await create_schedule(client, request, Timing.parse(cron="61 * * * *"), task_queue="q")
    with pytest.raises(ScheduleError, match="schedule id"):
        await create_schedule(
            client, request, Timing.parse(every="1h"), task_queue="q", schedule_id="a b"
        )
    assert not await _exists(client, derived_schedule_id(request))


def _cli_env(client: Client, tmp_path: Path) -> dict[str, str]:
    """What `agentkeel` reads to reach the test server (and no stack a developer runs)."""
    return {
        "AGENTKEEL_TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "AGENTKEEL_TEMPORAL_NAMESPACE": client.namespace,
        "AGENTKEEL_STATE_DIR": str(tmp_path),
    }


async def test_the_cli_adds_lists_pauses_and_deletes(
    client: Client,
    schedule_ids: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in _cli_env(client, tmp_path).items():
        monkeypatch.setenv(name, value)
    # In-process, `main` must return instead of leaving the process, and leave logging be.
    monkeypatch.setattr(agentkeel.cli.main, "_exit_skipping_teardown", lambda code: code)
    monkeypatch.setattr(agentkeel.cli.main, "configure_logging", lambda *_: None)

    async def cli(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        # `main` runs its own event loop, so it runs beside this test's, in a thread.
        code = await asyncio.to_thread(agentkeel.cli.main.main, ["schedule", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    schedule_id = _unique_id()
    schedule_ids.append(schedule_id)
    code, out, _ = await cli(
        "add", QUESTION, "--every", "1h30m", "--id", schedule_id,
        "--tenant", "acme", "--as", "customer:7", "--paused",
    )  # fmt: skip
    assert code == 0 and out.startswith(f"schedule {schedule_id}: every 1h30m, paused")

    for _ in range(50):  # the listing is eventually consistent
        code, out, _ = await cli("list", "--json")
        found = [s for s in json.loads(out) if s["id"] == schedule_id]
        if found:
            break
        await asyncio.sleep(0.1)
    [listed] = found
    assert listed["paused"] and listed["every"] == "1h30m" and listed["next_run"] is None
    assert (listed["question"], listed["tenant"]) == (QUESTION, "acme")
    assert listed["actor"] == {"role": "customer", "subject": "7", "name": None}

    assert (await cli("unpause", schedule_id))[0] == 0
    code, out, _ = await cli("list")
    [row] = [line for line in out.splitlines() if line.startswith(schedule_id)]
    assert row.split()[1:4] == ["active", "every", "1h30m"]
    assert "customer 7" in row and row.endswith(QUESTION)

    assert (await cli("pause", schedule_id, "--note", "holiday"))[0] == 0
    assert (await client.get_schedule_handle(schedule_id).describe()).schedule.state.paused

    code, _, err = await cli("add", QUESTION, "--every", "1h", "--id", schedule_id)
    assert code == 2 and "already exists" in err

    assert (await cli("delete", schedule_id))[0] == 0
    assert not await _exists(client, schedule_id)

    refusals = {
        ("delete", schedule_id): f"no schedule '{schedule_id}'",
        ("add", QUESTION, "--every", "0s"): "--every must be at least 1s, got '0s'",
        ("add", " ", "--every", "1m"): "invalid request: question",
        (
            "add",
            QUESTION,
            "--every",
            "1m",
            "--as",
            "customer:0",
        ): "actor.subject '0' is not a customer subject",
        ("add", QUESTION, "--cron", "every day"): "--cron 'every day' is not valid",
    }
    for argv, message in refusals.items():
        code, out, err = await cli(*argv)
        assert (code, out) == (2, ""), argv
        assert err.count("\n") == 1 and message in err, err


async def test_the_cli_process_exits_2_with_one_line(client: Client, tmp_path: Path) -> None:
    """The real entry point, with its process exit: no traceback, one line, status 2."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentkeel.cli.main", "schedule", "pause", "no-such-schedule",
        env={**os.environ, **_cli_env(client, tmp_path)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 2
    assert out == b""
    assert err.decode() == "agentkeel schedule pause: no schedule 'no-such-schedule'\n"


async def _first_run_of(client: Client, schedule_id: str) -> AgentResult:
    handle = client.get_schedule_handle(schedule_id)
    fired = await _until(handle.describe, lambda d: bool(d.info.recent_actions))
    first = fired.info.recent_actions[0].action
    assert isinstance(first, ScheduleActionExecutionStartWorkflow)
    await handle.pause(note="one run is enough")
    run = client.get_workflow_handle(first.workflow_id, result_type=AgentResult)
    return await asyncio.wait_for(run.result(), timeout=30)


async def test_a_scheduled_run_makes_no_side_effect_unless_its_schedule_allowed_it(
    client: Client, stack: AgentStack, schedule_ids: list[str], orders_db: asyncpg.Pool
) -> None:
    # Delivered: the rules policy plans a refund for a delivered order only.
    order_id = await orders_db.fetchval(
        "SELECT o.order_id FROM orders o WHERE o.status = 'delivered' AND o.total_cents - "
        "(SELECT coalesce(sum(amount_cents), 0) FROM refunds r WHERE r.order_id = o.order_id)"
        " >= 500 ORDER BY o.order_id LIMIT 1"
    )
    assert order_id is not None
    question = f"Please refund $1.00 for order {order_id}, it arrived damaged"
    every = Timing.parse(every="1s")
    read_only = scheduled_request(question, tenant=stack.tenant, actor=ANN)
    schedule_ids.append(
        await create_schedule(client, read_only, every, task_queue=stack.task_queue)
    )
    refused = await _first_run_of(client, schedule_ids[-1])
    # (The run answers what it can read; the same request, allowed below, refunds.)
    assert not any(s.tool == "create_refund" and s.output for s in refused.steps)

    with pytest.raises(ScheduleError, match="may not let a schedule make side effects"):
        scheduled_request(
            question,
            tenant=stack.tenant,
            actor=Actor(role="customer", subject="1"),
            effects=True,
        )
    allowed = scheduled_request(question, tenant=stack.tenant, actor=ANN, effects=True)
    allowed = allowed.model_copy(update={"question": question + " please"})  # another id
    schedule_ids.append(await create_schedule(client, allowed, every, task_queue=stack.task_queue))
    made = await _first_run_of(client, schedule_ids[-1])
    [refund] = [s for s in made.steps if s.tool == "create_refund"]
    assert refund.output is not None and refund.output["created"] is True
