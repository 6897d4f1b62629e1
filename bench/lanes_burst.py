"""The burst of `bench.lanes`: the cache warmer started as its schedule starts it, and a
flooding tenant's runs sent through the HTTP gateway at once."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
from temporalio.client import WorkflowHandle

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKeys
from agentkeel.gateway.server import serving
from agentkeel.schemas.lanes import Lane
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.result import AgentResult
from agentkeel.schemas.warming import WarmInput, WarmResult
from agentkeel.settings.model import Settings
from agentkeel.settings.ports import free_port
from agentkeel.workers.warming_schedule import warmer_priority
from agentkeel.workflows.warmer import CacheWarmerWorkflow
from bench.load import questions
from bench.stack import BenchStack, child_environ

FLOOD_TENANT = "tenant-flood"


def request_of(n: int, tenant: str) -> AgentRequest:
    """The n-th bench question of `tenant`, uncached (every run does the same work)."""
    return AgentRequest(question=questions()(n), tenant=tenant, options=RunOptions(use_cache=False))


Handles = list[WorkflowHandle[object, AgentResult]]


SEEDED_ORDERS = 200


def hot_question(n: int) -> AgentRequest:
    """The warmer's n-th hot question, each of its own, about the seeded orders."""
    order = 1001 + n % SEEDED_ORDERS
    asked = (f"Where is order {order}?", f"Can order {order} be fulfilled from stock?")
    return AgentRequest(question=asked[n // SEEDED_ORDERS % 2], tenant="default")


async def seed_hot_questions(agents: AgentClient, warm: int, in_flight: int) -> None:
    """Ask each hot question once, so the run records make them the warmer's."""
    pending = iter(range(warm))

    async def asker() -> None:
        for n in pending:
            await agents.ask(hot_question(n), coalesce=False)

    await asyncio.gather(*(asker() for _ in range(in_flight)))


async def start_warmer(
    agents: AgentClient, args: argparse.Namespace, lanes: bool
) -> WorkflowHandle[CacheWarmerWorkflow, WarmResult] | Handles:
    """The warmer, started as its schedule starts it; with `--warmer burst`, its runs all
    at once instead."""
    if args.warmer == "burst":
        return list(
            await asyncio.gather(
                *(
                    agents.start(request_of(n, "default"), coalesce=False, lane=Lane.WARMING)
                    for n in range(args.warm)
                )
            )
        )
    # Every seeded question is due (renew_below_s: longer than any entry lives).
    request = WarmInput(
        top_n=args.warm, since_hours=1, renew_below_s=10**9, max_parallel=args.warm_parallel
    )
    return await agents.temporal.start_workflow(
        CacheWarmerWorkflow.run,
        request,
        id=f"bench-warmer-{uuid.uuid4().hex[:8]}",
        task_queue=args.task_queue,
        priority=warmer_priority(Settings(priority_lanes=lanes)),
    )


@asynccontextmanager
async def gateway(
    stack: BenchStack, args: argparse.Namespace, lanes: bool
) -> AsyncIterator[httpx.AsyncClient]:
    """The HTTP gateway onto the stack, with its quotas of runs lifted (the flood is a
    tenant allowed that many) and its interactive share per tenant from `args`: its own
    process (`python -m agentkeel.gateway`), as deployed, or with `--gateway inline` in
    this one, beside the interactive runs' client and the workers."""
    settings = stack.settings.model_copy(
        update={
            "priority_lanes": lanes,
            "gateway_runs_per_key": 0,
            "gateway_runs_per_tenant": 0,
            "gateway_interactive_runs_per_tenant": args.interactive_share,
            "gateway_address": f"127.0.0.1:{free_port()}",
        }
    )
    async with AsyncExitStack() as exits:
        if args.gateway == "inline":
            app = create_app(
                AgentClient.from_settings(stack.client, settings), ApiKeys([]), settings
            )
            url = await exits.enter_async_context(serving(app, "127.0.0.1", free_port()))
        else:
            url = await exits.enter_async_context(_gateway_process(stack, settings))
        http = await exits.enter_async_context(
            httpx.AsyncClient(
                base_url=url, timeout=60, trust_env=False, limits=httpx.Limits(max_connections=None)
            )
        )
        yield http


@asynccontextmanager
async def _gateway_process(stack: BenchStack, settings: Settings) -> AsyncIterator[str]:
    url = f"http://{settings.gateway_address}"
    said = tempfile.TemporaryFile()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentkeel.gateway",
        env=child_environ(stack.client, settings),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=said,  # (a file: a pipe nobody reads would stall the gateway once full)
    )
    try:
        async with httpx.AsyncClient(base_url=url, trust_env=False) as probe, asyncio.timeout(60):
            while True:
                with contextlib.suppress(httpx.TransportError):
                    if (await probe.get("/healthz")).status_code == 200:
                        break
                if child.returncode is not None:
                    said.seek(0)
                    last = said.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"the gateway exited with {child.returncode}: {last}")
                await asyncio.sleep(0.2)
        yield url
    finally:
        if child.returncode is None:
            child.terminate()
        try:
            await asyncio.wait_for(child.wait(), timeout=10)
        except TimeoutError:
            child.kill()
            await child.wait()
        said.close()


async def flood(agents: AgentClient, http: httpx.AsyncClient, flood: int) -> Handles:
    """The flooding tenant's runs, each started through `POST /v1/runs` at once."""

    async def one(n: int) -> WorkflowHandle[object, AgentResult]:
        body = request_of(n, FLOOD_TENANT).model_dump(mode="json", exclude_defaults=True)
        started = await http.post("/v1/runs", params={"coalesce": "false"}, json=body)
        started.raise_for_status()
        workflow_id = started.json()["workflow_id"]
        return agents.temporal.get_workflow_handle(workflow_id, result_type=AgentResult)

    return list(await asyncio.gather(*(one(n) for n in range(flood))))
