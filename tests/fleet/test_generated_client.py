"""A client generated from the gateway's OpenAPI document by a generator nobody on this
project wrote (`openapi-python-client`, from PyPI) works against a real gateway: it starts a
run, follows the run's events to its result, and reads an error as the problem details the
document promises. The generator is given one mapping, the one its docs prescribe for
problem details (`application/problem+json` read as JSON)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.agent_stack import AgentStack
from tests.support.gateway_http import QUESTION, gateway

pytest.importorskip("openapi_python_client")
PACKAGE = "agentkeel_gateway_client"
CONFIG = f"""\
project_name_override: agentkeel-gateway-client
package_name_override: {PACKAGE}
content_type_overrides:
  application/problem+json: application/json
"""


def _generate(document: dict[str, Any], into: Path) -> None:
    (into / "openapi.json").write_text(json.dumps(document))
    (into / "config.yaml").write_text(CONFIG)
    bin_dir = Path(sys.executable).parent  # the generator's script, and ruff for its hooks
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(bin_dir / "openapi-python-client"), "generate", "--path", "openapi.json",
         "--config", "config.yaml", "--meta", "none", "--output-path", PACKAGE],
        capture_output=True, text=True, cwd=into, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and "Warning" not in done.stdout, done.stdout + done.stderr


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[name]
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def _load(into: Path, *names: str) -> list[ModuleType]:
    sys.path.insert(0, str(into))
    return [importlib.import_module(f"{PACKAGE}.{name}") for name in names]


def _sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a Server-Sent Events body."""
    events: list[tuple[str, dict[str, Any]]] = []
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if "event" in fields:
                events.append((fields["event"], json.loads(fields.get("data", "null"))))
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
    return events


async def test_a_generated_client_starts_follows_and_reads_errors(
    stack: AgentStack, generated: Path
) -> None:
    async with gateway(stack) as http:
        _generate((await http.get("/openapi.json")).json(), generated)
        client_mod, start_run, events_api, get_run, models = _load(
            generated, "client", "api.runs.start_run", "api.runs.stream_run_events",
            "api.runs.get_run", "models",
        )  # fmt: skip
        client = client_mod.Client(base_url=str(http.base_url), timeout=http.timeout)
        async with client:
            body = models.AgentRequest.from_dict({"question": QUESTION, "tenant": stack.tenant})
            started = await start_run.asyncio_detailed(client=client, body=body)
            assert started.status_code == 202, started.content
            run = started.parsed
            assert isinstance(run, models.RunView) and run.state == models.RunState.RUNNING

            stream = await events_api.asyncio_detailed(run.workflow_id, client=client)
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = _sse(stream.parsed)
            assert events[-1][0] == "result", events
            result = models.AgentResult.from_dict(events[-1][1])
            tokens = "".join(data["text"] for kind, data in events if kind == "token")
            assert result.answer and tokens.strip() == result.answer.strip()

            missing = await get_run.asyncio_detailed("no-such-run", client=client)
            problem = missing.parsed
            assert missing.status_code == 404 and isinstance(problem, models.Problem)
            assert (problem.type_, problem.status) == ("/problems/run-not-found", 404)
            assert problem.title == "No such run" and "no-such-run" in problem.detail
