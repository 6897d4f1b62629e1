"""A CPU worker serving `tests/domains/mcp_domain` with MCP servers, as a child process.

The worker is the unchanged `agentkeel worker cpu` binary; its MCP servers are the
toolbox of the suite (the domain's) and the reference servers (the deployment's,
`AGENTKEEL_MCP_SERVERS`): `mcp-server-time` and `server-memory` over stdio,
`server-everything` over streamable HTTP. This process is only a Temporal client.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client, WorkflowHandle

from agentkeel.schemas.names import AGENT_WORKFLOW
from agentkeel.settings.ports import free_port
from tests.support.mcp_reference import npm_server, time_server
from tests.support.paths import DOMAINS, ROOT
from tests.support.pg import fresh_database

OPERATOR = {"role": "operator", "name": "ann"}
VIEWER = {"role": "viewer", "name": "vic"}


def reference_servers(state: Path, everything_url: str) -> list[dict[str, Any]]:
    """The deployment's MCP servers, as `AGENTKEEL_MCP_SERVERS` lists them."""
    memory = npm_server("memory")
    return [
        {"name": "time", "command": time_server(), "cache_ttl_s": 60},
        {
            "name": "memory",
            "command": memory[0],
            "args": memory[1:],
            "env": {"MEMORY_FILE_PATH": str(state / "memory.jsonl")},
            "tools": {"delete_entities": {"needs_approval": True}},
        },
        {"name": "everything", "url": everything_url, "include": ["get-sum", "echo"]},
    ]


class Everything:
    """`server-everything` over streamable HTTP on `port` (stopped and started again by
    the test that restarts it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        command = npm_server("everything")
        process = await asyncio.create_subprocess_exec(
            *command,
            "streamableHttp",
            env={**os.environ, "PORT": str(self.port)},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stderr is not None
        for _ in range(100):
            line = await asyncio.wait_for(process.stderr.readline(), timeout=30)
            if b"listening" in line.lower():
                # Keep draining its log, or a full pipe would stall the server.
                asyncio.get_running_loop().create_task(_drain(process.stderr))
                self.process = process
                return
        raise AssertionError("server-everything never said it listens")

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


class McpStack:
    """Workers of the MCP domain on one task queue, and runs started on it."""

    def __init__(self, client: Client, env: dict[str, str], state: Path) -> None:
        self.client, self.env, self.state = client, env, state
        self.queue = env["AGENTKEEL_TASK_QUEUE"]
        self.workers: list[asyncio.subprocess.Process] = []

    async def start_worker(self) -> asyncio.subprocess.Process:
        log = (self.state / f"worker-{len(self.workers)}.log").open("wb")
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentkeel.workers",
            "cpu",
            env=self.env,
            stdout=log,
            stderr=log,
        )
        self.workers.append(worker)
        return worker

    async def start_gateway(self) -> str:
        """`agentkeel gateway` for this stack (no keys: loopback); its URL once it answers."""
        port = free_port()
        log = (self.state / "gateway.log").open("wb")
        gateway = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "agentkeel.cli.main", "gateway"),
            env={
                **self.env,
                "AGENTKEEL_GATEWAY_ADDRESS": f"127.0.0.1:{port}",
                "AGENTKEEL_STATE_DIR": str(self.state / "gateway"),
            },
            stdout=log,
            stderr=log,
        )
        self.workers.append(gateway)  # stopped with the workers
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient() as http:
            for _ in range(600):
                if gateway.returncode is not None:
                    raise AssertionError((self.state / "gateway.log").read_text()[-3000:])
                try:
                    if (await http.get(url + "/healthz")).status_code == 200:
                        return url
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError("the gateway never answered")

    def kill(self, worker: asyncio.subprocess.Process) -> None:
        os.kill(worker.pid, signal.SIGKILL)

    async def stop(self) -> None:
        for worker in self.workers:
            if worker.returncode is None:
                worker.terminate()
        for worker in self.workers:
            try:
                await asyncio.wait_for(worker.wait(), timeout=30)
            except TimeoutError:
                worker.kill()

    async def start(
        self, plan: dict[str, Any], actor: dict[str, Any] = OPERATOR, **fields: Any
    ) -> WorkflowHandle[Any, Any]:
        request = {"question": "mcp test", "actor": actor, "plan": plan, **fields}
        return await self.client.start_workflow(
            AGENT_WORKFLOW,
            request,
            id=f"mcp-{uuid.uuid4().hex[:12]}",
            task_queue=self.queue,
            result_type=dict,
        )

    async def run(self, plan: dict[str, Any], actor: dict[str, Any] = OPERATOR) -> Any:
        handle = await self.start(plan, actor)
        return await asyncio.wait_for(handle.result(), timeout=45)

    async def ask(self, question: str, *, role: str = "operator") -> dict[str, Any]:
        """`agentkeel ask QUESTION --json` in a process of its own: an in-process
        `AgentClient` (its fast path first), as a service would make one."""
        asking = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "agentkeel.cli.main", "ask", question, "--json", "--as", role),
            env={**self.env, "AGENTKEEL_STATE_DIR": str(self.state / "cli")},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(asking.communicate(), timeout=120)
        assert asking.returncode == 0, err.decode()[-3000:]
        answer: dict[str, Any] = json.loads(out)
        return answer

    def calls(self, event: str, **fields: Any) -> int:
        """How many `event`s with `fields` the toolbox saw."""
        return sum(
            1
            for e in self.events()
            if e["event"] == event and all(e.get(k) == v for k, v in fields.items())
        )

    def events(self) -> list[dict[str, Any]]:
        path = self.state / "toolbox" / "events.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    async def until_event(self, kind: str, timeout_s: float = 30) -> dict[str, Any]:
        for _ in range(int(timeout_s / 0.05)):
            found = [e for e in self.events() if e["event"] == kind]
            if found:
                return found[-1]
            await asyncio.sleep(0.05)
        raise AssertionError(f"the toolbox never saw {kind}: {self.events()}")


def worker_env(
    client: Client, database_url: str, redis_url: str, state: Path, servers: Any
) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTKEEL_")},
        "PYTHONPATH": os.pathsep.join([str(DOMAINS), str(ROOT)]),
        "AGENTKEEL_DOMAIN": "mcp_domain:domain",
        "AGENTKEEL_MCP_SERVERS": json.dumps(servers),
        "AGENTKEEL_DATABASE_URL": database_url,
        "AGENTKEEL_REDIS_URL": redis_url,
        "AGENTKEEL_TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "AGENTKEEL_TASK_QUEUE": f"mcp-{uuid.uuid4().hex[:12]}",
        "AGENTKEEL_METRICS_ADDRESS": "off",
        "AGENTKEEL_WARM_EVERY_S": "0",
        "AGENTKEEL_SEMANTIC_CACHE": "off",
        "AGENTKEEL_LOG_FORMAT": "json",
        "TOOLBOX_STATE": str(state / "toolbox"),
    }


@asynccontextmanager
async def mcp_stack(
    client: Client, admin_dsn: str, template_database: str, redis_url: str, state: Path
) -> AsyncIterator[tuple[McpStack, Everything]]:
    everything = Everything(free_port())
    await everything.start()
    url = f"http://127.0.0.1:{everything.port}/mcp"
    async with fresh_database(admin_dsn, template=template_database) as database_url:
        env = worker_env(client, database_url, redis_url, state, reference_servers(state, url))
        stack = McpStack(client, env, state)
        await stack.start_worker()
        try:
            yield stack, everything
        finally:
            await stack.stop()
            await everything.stop()
