"""MCP benchmark: what a durable step adds to an MCP tool call, over stdio and HTTP.

    python -m bench.mcp [--calls N] [--warmup N]

The suite's toolbox server (`tests/support/mcp_toolbox.py`) is started twice, over stdio and
over streamable HTTP; its read `whoami` is called N times, one at a time, by:

* direct — a plain MCP SDK client, warm session (the baseline);
* step   — the tool function agentkeel's CPU worker calls (authority, `_meta`, result
  check), on the worker's own connection;
* run    — a whole `AgentWorkflow` run of a one-step plan calling it (dev server, CPU
  worker in this process, the respond step by the worker's own policy), what a caller
  waits for.

Each row is p50 / p90 in ms and the ratio of its p50 to the direct call's, for the same
server and transport in the same run. Needs the local Postgres and Redis (`bench.dag`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from temporalio.testing import WorkflowEnvironment

from agentkeel.cli.stack.databases import throwaway_database
from agentkeel.cli.stack.procs import find_temporal_binary
from agentkeel.cli.stack.temporal import queue_poll_flags
from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.schemas.tools import TOOLS
from agentkeel.sdk.context import ToolContext
from agentkeel.sdk.domain import Domain
from agentkeel.settings.model import Settings
from agentkeel.settings.namespace_setup import ensure_search_attributes
from agentkeel.settings.ports import free_port
from agentkeel.workers.resources import cpu_activities
from agentkeel.workers.temporal_client import agentkeel_plugins
from agentkeel.workers.worker import cpu_worker
from bench.stack import StackConfig

TOOLBOX = Path(__file__).resolve().parent.parent / "tests" / "support" / "mcp_toolbox.py"
DOMAIN = Domain(name="mcpbench", tools=(), persona="A benchmark of MCP tool calls.")
"""What `AGENTKEEL_DOMAIN=bench.mcp:DOMAIN` serves: no tools but the MCP servers'."""


async def timed(calls: int, warmup: int, one: Callable[[], Awaitable[Any]]) -> list[float]:
    for _ in range(warmup):
        await one()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await one()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def p(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1]


async def start_http_toolbox(port: int, state: str) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(TOOLBOX),
        "--http",
        str(port),
        env={**os.environ, "TOOLBOX_STATE": state},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return process
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError("the HTTP toolbox never listened")


async def main(calls: int, warmup: int) -> None:
    config = StackConfig.from_env()
    state = tempfile.mkdtemp(prefix="bench-mcp-")
    port = free_port()
    toolbox_env = {"TOOLBOX_STATE": state}
    url = f"http://127.0.0.1:{port}/mcp"
    servers = [
        {"name": "stdio", "command": sys.executable, "args": [str(TOOLBOX)], "env": toolbox_env},
        {"name": "http", "url": url},
    ]
    direct_targets: dict[str, Any] = {
        "stdio": StdioServerParameters(
            command=sys.executable, args=[str(TOOLBOX)], env=toolbox_env
        ),
        "http": url,
    }
    async with AsyncExitStack() as stack:
        toolbox = await start_http_toolbox(port, state)
        stack.callback(toolbox.terminate)
        database_url = await stack.enter_async_context(
            throwaway_database(config.admin_dsn, prefix="agentkeel_bench")
        )
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=find_temporal_binary(),
            plugins=agentkeel_plugins(),
            dev_server_log_level="error",
            dev_server_extra_args=queue_poll_flags(),
        )
        stack.push_async_callback(env.shutdown)
        await ensure_search_attributes(env.client, env.client.namespace)
        settings = Settings(
            database_url=database_url,
            redis_url=config.redis_url,
            task_queue=f"bench-{uuid.uuid4().hex[:12]}",
            domain="bench.mcp:DOMAIN",
            mcp_servers=json.dumps(servers),
            semantic_cache="off",
        )
        activities = await stack.enter_async_context(cpu_activities(settings))
        await stack.enter_async_context(cpu_worker(env.client, settings.task_queue, activities))
        print(f"{'transport':<10}{'path':<8}{'p50 ms':>9}{'p90 ms':>9}{'x direct':>10}")
        for transport in ("stdio", "http"):
            rows = await measure(transport, direct_targets[transport], env, settings, calls, warmup)
            base = statistics.median(rows["direct"])
            for name, samples in rows.items():
                ratio = statistics.median(samples) / base
                print(
                    f"{transport:<10}{name:<8}{statistics.median(samples):>9.2f}"
                    f"{p(samples, 90):>9.2f}{ratio:>10.1f}"
                )


async def measure(
    transport: str,
    target: Any,
    env: WorkflowEnvironment,
    settings: Settings,
    calls: int,
    warmup: int,
) -> dict[str, list[float]]:
    """The three ways of calling the toolbox's `whoami` over `transport`, timed."""
    async with Client(target, cache=None) as plain:
        direct = await timed(calls, warmup, lambda: plain.call_tool("whoami", {}))
    spec = TOOLS[f"{transport}_whoami"]
    fn = spec.fn
    assert fn is not None
    args = spec.activity_input_model.model_validate({})
    ctx = ToolContext(actor=None, resources=None)
    step = await timed(calls, warmup, lambda: fn(args, ctx))
    request = {
        "question": "whoami",
        "options": {"use_cache": False},
        "plan": {"steps": [{"id": "s1", "tool": spec.name, "args": {}}]},
    }

    async def run() -> Any:
        return await env.client.execute_workflow(
            AGENT_WORKFLOW,
            request,
            id=f"bench-{uuid.uuid4().hex}",
            task_queue=settings.task_queue,
            result_type=dict,
        )

    runs = await timed(max(calls // 4, 10), min(warmup, 3), run)
    return {"direct": direct, "step": step, "run": runs}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup))
