"""The gateway without a server: keys required off loopback, and a run's event stream that
cannot read the run's outcome ends with an error."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, cast

import pytest
from temporalio.service import RPCError, RPCStatusCode

from agentkeel.gateway.events import run_events
from agentkeel.gateway.keys import Caller
from agentkeel.gateway.mcp.operations import Operations
from agentkeel.gateway.mcp.tools import build_mcp_server
from agentkeel.gateway.server import checked_keys
from agentkeel.settings.model import Settings, StartupError


def test_without_keys_the_gateway_serves_loopback_only(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=r"only 127\.0\.0\.1"):
        checked_keys(Settings(gateway_address="0.0.0.0:8080"), "0.0.0.0")
    assert not checked_keys(Settings(), "127.0.0.1").configured
    bad = tmp_path / "keys.json"
    staff = {"role": "staff", "name": "ops"}
    bad.write_text(json.dumps({"keys": [{"tenant": "acme", "actor": staff}]}))
    with pytest.raises(StartupError, match="exactly one of token_sha256 and token"):
        checked_keys(Settings(api_keys_file=str(bad)), "127.0.0.1")
    bad.write_text(json.dumps({"keys": [{"tenant": "acme", "token": "t" * 20}]}))
    with pytest.raises(StartupError, match=r"keys\.0\.actor: Field required"):
        checked_keys(Settings(api_keys_file=str(bad)), "127.0.0.1")
    twice = {"tenant": "acme", "token": "t" * 20, "actor": staff}
    bad.write_text(json.dumps({"keys": [twice, twice]}))
    with pytest.raises(StartupError, match="two keys have the same token"):
        checked_keys(Settings(api_keys_file=str(bad)), "127.0.0.1")
    bad.write_text("{")
    with pytest.raises(StartupError, match="not JSON"):
        checked_keys(Settings(api_keys_file=str(bad)), "127.0.0.1")


class _Described:
    run_id = "r1"
    status = None


class _Handle:
    id = "w1"

    async def describe(self) -> _Described:
        return _Described()


class _UnreachableRuns:
    """A `Runs` whose Temporal stops answering once the stream has begun."""

    def handle(self, workflow_id: str) -> _Handle:
        return _Handle()

    async def progress(self, workflow_id: str) -> None:
        return None

    async def outcome(self, handle: _Handle) -> Any:
        raise RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b"")


async def test_a_stream_whose_outcome_cannot_be_read_ends_with_an_error() -> None:
    events = []
    async with asyncio.timeout(5):
        async for event in run_events(_UnreachableRuns(), None, "w1", None):  # type: ignore[arg-type]
            events.append(event)
    assert [e.type.value for e in events] == ["error"]
    assert "could not read the run's outcome" in json.loads(events[0].data)["message"]


def test_the_mcp_server_leaves_the_host_process_logging_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process embedding the gateway that configured no logging keeps none: the MCP SDK's
    rich handler would render every library's warnings (a tool's `NotFound`) on the loop."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", logging.WARNING)
    build_mcp_server(cast(Operations, None), lambda ctx: cast(Caller, None))
    assert root.handlers == [] and root.level == logging.WARNING
