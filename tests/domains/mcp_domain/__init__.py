"""A domain whose tools all come from MCP servers: the toolbox of the test suite, here,
and the reference servers the deployment adds (`AGENTKEEL_MCP_SERVERS`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentkeel import Domain, McpServer, McpToolPolicy, Role

TOOLBOX = Path(__file__).resolve().parents[2] / "mcp_toolbox.py"


def domain() -> Domain:
    """Built when loaded: the toolbox writes where `TOOLBOX_STATE` says."""
    toolbox = McpServer(
        name="tb",
        command=sys.executable,
        args=(str(TOOLBOX),),
        env={"TOOLBOX_STATE": os.environ.get("TOOLBOX_STATE", "/tmp/toolbox")},
        roles=("operator",),
        concurrency=4,
        timeout_s=20,
        tools={"append": McpToolPolicy(identity_args=("text",))},
    )
    return Domain(
        name="mcpdemo",
        tools=(),
        persona="You keep notes with the tools of MCP servers.",
        roles=(
            Role("operator", "runs every tool", may_approve=True, may_send_plans=True),
            Role("viewer", "reads the time", may_send_plans=True),
        ),
        mcp_servers=(toolbox,),
    )
