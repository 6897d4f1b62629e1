"""The Temporal Web UI as a console: agentkeel runs are listed by their question, checked in
a real browser (headless Chromium). Skipped where Chromium is not installed."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from agentkeel.cli.stack.procs import find_temporal_binary
from agentkeel.cli.stack.temporal import queue_poll_flags
from agentkeel.schemas.request import AgentRequest
from agentkeel.settings.namespace_setup import ensure_search_attributes
from agentkeel.settings.ports import free_port
from agentkeel.workers.temporal_client import agentkeel_plugins
from tests.support.agent_stack import StackFactory

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")


@pytest.fixture
async def with_ui() -> AsyncIterator[tuple[WorkflowEnvironment, int]]:
    port = free_port()
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(),
        ui=True,
        ui_port=port,
        dev_server_extra_args=queue_poll_flags(),
        plugins=agentkeel_plugins(),
    )
    await ensure_search_attributes(env.client, env.client.namespace)
    try:
        yield env, port
    finally:
        await env.shutdown()


async def _browser(*args: str) -> str:
    assert CHROMIUM is not None
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace for the sandbox
        "--disable-gpu",
        "--window-size=1600,900",
        "--virtual-time-budget=20000",  # the UI is a single-page app: let it fetch and render
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return out.decode(errors="replace")


async def test_a_runs_page_shows_its_question_and_who_asked(
    with_ui: tuple[WorkflowEnvironment, int], make_stack: StackFactory, tmp_path: Path
) -> None:
    env, port = with_ui
    stack = await make_stack(on=env.client)
    # Longer than the summary: the page must show the shortened summary, not only the input.
    question = "Where is order 1001? It was a birthday present " + "and it is late " * 5
    handle = await stack.agent_client().start(
        AgentRequest(question=question, tenant=stack.tenant), coalesce=False
    )
    await handle.result()
    summary = await (await handle.describe()).static_summary()
    assert summary is not None and summary.endswith("…")
    base = f"http://127.0.0.1:{port}/namespaces/default/workflows"
    # The run's history page shows its summary (the question, shortened: not its input).
    run_page = f"{base}/{handle.id}/{handle.result_run_id}"
    page = f"{run_page}/history"
    dom = ""
    for _ in range(3):  # the first paint can come before the page's fetch returns
        dom = await _browser("--dump-dom", page)
        if summary in dom:
            break
    assert summary in dom, "the run's page does not show its summary"
    # Its search attributes include the tenant, which the list can be filtered by.
    attributes = await _browser("--dump-dom", f"{run_page}/metadata")
    assert "AgentTenant" in attributes and stack.tenant in attributes
    # The list shows the run (the Summary column is one of its "Configure Columns" choices).
    listing = await _browser("--dump-dom", base)
    assert handle.id in listing
    shot = tmp_path / "workflow.png"
    await _browser(f"--screenshot={shot}", page)
    assert shot.exists() and shot.stat().st_size > 10_000
