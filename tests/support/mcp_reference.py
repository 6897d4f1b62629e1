"""The MCP reference servers, as published: `mcp-server-time` (PyPI, installed with the
dev extra) and `@modelcontextprotocol/server-everything` / `server-memory` (npm, installed
once into a cache folder of the test suite, then run with Node). A machine without npm or
its registry skips the tests that need them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.locks import held

NPM_PACKAGES = {
    "everything": "@modelcontextprotocol/server-everything@2026.8.31",
    "memory": "@modelcontextprotocol/server-memory@2026.8.31",
    # Later releases need Node 22; this one runs on the machine's Node 20.
    "conformance": "@modelcontextprotocol/conformance@0.1.8",
}
ENTRY_POINTS = {"conformance": "dist/index.js"}
CACHE = Path.home() / ".cache" / "agentkeel-tests" / "mcp-npm"


def time_server() -> str:
    """The `mcp-server-time` command beside this interpreter."""
    command = Path(sys.executable).with_name("mcp-server-time")
    if not command.exists():
        pytest.skip("mcp-server-time is not installed (pip install -e '.[dev]')")
    return str(command)


def npm_server(name: str) -> list[str]:
    """`node <entry point>` of the reference server `name`, installing it on first use."""
    package = NPM_PACKAGES[name]
    bare = package.rsplit("@", 1)[0]
    entry = CACHE / "node_modules" / bare / ENTRY_POINTS.get(name, "dist/index.js")
    with held("mcp-npm"):  # one test process installs; the others find it installed
        if not entry.exists():
            _install(package, entry)
    node = shutil.which("node")
    assert node is not None
    return [node, str(entry)]


def _install(package: str, entry: Path) -> None:
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        pytest.skip("node and npm are needed for the MCP reference servers")
    CACHE.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(CACHE),
            *NPM_PACKAGES.values(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if made.returncode != 0 or not entry.exists():
        pytest.skip(f"cannot install {package}: {made.stderr[-300:]}")
