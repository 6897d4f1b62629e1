"""A misbehaving MCP server degrades its own tools only (no server runs: its command does not
exist, and one tool of a listing cannot be served)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import mcp.types as types
import pytest

from agentkeel.activities.mcp.connection import McpConnection, resolve_command
from agentkeel.activities.mcp.source import McpToolSource
from agentkeel.activities.mcp.specs import mcp_downstream, served_specs
from agentkeel.sdk.mcp import McpServer


async def test_a_server_that_cannot_start_is_withdrawn_not_fatal() -> None:
    source = McpToolSource([McpServer(name="gone", command="/nonexistent/mcp-server")])
    try:
        specs, downstreams = await source.start()
    finally:
        await source.close()
    assert specs == [] and downstreams == []
    assert list(source.withdrawn) == ["gone_*"] and "gone" in source.withdrawn["gone_*"]


def test_a_tool_with_a_reserved_argument_is_left_out_alone() -> None:
    server = McpServer(name="w", command="x")
    schema = {"type": "object", "properties": {"tenant": {"type": "string"}}}
    tools = [
        types.Tool(name="bad", input_schema=schema),
        types.Tool(name="good", input_schema={"type": "object", "properties": {}}),
    ]
    specs, refused = served_specs(McpConnection(server), tools, mcp_downstream(server))
    assert [s.name for s in specs] == ["w_good"]
    assert list(refused) == ["w_bad"] and "tenant" in refused["w_bad"]


async def test_a_server_unavailable_at_start_is_asked_again_and_its_return_restarts(
    tmp_path: Path,
) -> None:
    """The outage is the server's, not the worker's for life: once the server answers, the
    worker is told, as of a changed list, and restarts serving its tools."""
    ready = tmp_path / "ready"
    script = tmp_path / "late-server"
    server_bin = Path(sys.executable).parent / "mcp-server-time"
    script.write_text(f'#!/bin/sh\n[ -e "{ready}" ] || exit 1\nexec "{server_bin}"\n')
    script.chmod(0o755)
    changed: list[str] = []
    back = asyncio.Event()

    def on_change(name: str) -> None:
        changed.append(name)
        back.set()

    server = McpServer(name="late", command=str(script), list_timeout_s=10)
    source = McpToolSource([server], on_change=on_change, retry_s=0.2)
    try:
        specs, _ = await source.start()
        assert specs == [] and list(source.withdrawn) == ["late_*"]
        await asyncio.sleep(0.5)
        assert changed == []  # still down: asked again, nothing to restart for
        ready.touch()
        await asyncio.wait_for(back.wait(), timeout=30)
    finally:
        await source.close()
    assert changed == ["late"]


def _program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_bare_command_is_found_in_the_interpreters_environment_before_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the README runs agentkeel: `.venv/bin/agentkeel up`, the venv not activated, so
    # the server `pip install`ed into it is not on PATH.
    venv_server = _program(tmp_path / "venv" / "bin" / "my-server")
    path_server = _program(tmp_path / "elsewhere" / "my-server")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    server = McpServer(name="mine", command="my-server")
    environ = {"PATH": str(path_server.parent)}
    assert resolve_command(server, environ) == str(venv_server)
    venv_server.unlink()
    assert resolve_command(server, environ) == str(path_server)


async def test_a_command_found_nowhere_is_withdrawn_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    source = McpToolSource(
        [McpServer(name="time", command="mcp-server-time")], environ={"PATH": str(tmp_path)}
    )
    try:
        specs, _ = await source.start()
    finally:
        await source.close()
    assert specs == []
    reason = source.withdrawn["time_*"]
    assert "'mcp-server-time' was found neither in this Python environment" in reason
    assert f"`{tmp_path / 'bin' / 'pip'} install ...`" in reason
    assert "full path" in reason


def test_an_mcp_tools_answer_is_readable_text_not_a_python_repr() -> None:
    server = McpServer(name="time", command="x")
    tool = types.Tool(name="get_current_time", input_schema={"type": "object", "properties": {}})
    (spec,), _ = served_specs(McpConnection(server), [tool], mcp_downstream(server))
    assert spec.render is not None
    # mcp-server-time's answer: JSON as text content, as the reference server sends it.
    text = '{"timezone": "Europe/Warsaw", "datetime": "2026-12-06T01:00:00+01:00", "is_dst": false}'
    assert spec.render({"text": text}) == (
        "time_get_current_time: timezone: Europe/Warsaw; "
        "datetime: 2026-12-06T01:00:00+01:00; is_dst: no."
    )
    structured = {"total": 3, "items": [{"id": 1}, {"id": 2}], "next": None}
    assert spec.render(structured) == (
        "time_get_current_time: total: 3; items: ((id: 1), (id: 2)); next: none."
    )
    assert spec.render({"text": "It is noon."}) == "time_get_current_time: It is noon."


def test_a_relative_command_is_the_servers_cwds_and_its_own_path_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _program(tmp_path / "srv" / "server")
    server = McpServer(name="rel", command="./server", cwd=str(tmp_path / "srv"))
    assert resolve_command(server, {}) == "./server", "found where the process will look"
    # The server's own PATH names where its programs are: that wins over the venv.
    _program(tmp_path / "venv" / "bin" / "tool-server")
    own = _program(tmp_path / "own" / "tool-server")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    pinned = McpServer(name="pin", command="tool-server", env={"PATH": str(own.parent)})
    assert resolve_command(pinned, {}) == str(own)
