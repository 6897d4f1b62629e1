"""A domain whose tools all come from MCP servers: the toolbox of the test suite, here,
and the reference servers the deployment adds (`AGENTKEEL_MCP_SERVERS`).

It declares intents, and its MCP configuration puts the toolbox's tools in them; its
rules policy plans two kinds of question with them (so runs from questions, not only
from plans, reach the path cache and the intents' side effects)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentkeel import Domain, McpServer, McpToolPolicy, PlanPattern, Role, pattern_policy

TOOLBOX = Path(__file__).resolve().parents[2] / "support" / "mcp_toolbox.py"

PATTERNS = (
    PlanPattern(
        "lookup",
        r"^look up (?P<key>\w+)$",
        [{"id": "s1", "tool": "tb_lookup", "args": {"key": "{key}"}}],
    ),
    PlanPattern(
        "notes",
        r"^note (?P<text>\w+)$",
        [{"id": "s1", "tool": "tb_append", "args": {"text": "{text}"}}],
    ),
    PlanPattern(
        "notes",
        r"^forget (?P<text>\w+)$",
        [{"id": "s1", "tool": "tb_forget", "args": {"name": "{text}"}}],
    ),
    # A planner that obeys an injected instruction, at the model boundary: it writes a
    # target the request never named ("forget everything").
    PlanPattern(
        "notes",
        r"^tidy up after (?P<text>\w+)$",
        [{"id": "s1", "tool": "tb_forget", "args": {"name": "everything"}}],
    ),
    # A planner that appends what the request refuses ("don't append apples"), and one
    # that appends what it asks.
    PlanPattern(
        "notes",
        r"^don't append (?P<kept>\w+)\. append (?P<added>\w+)$",
        [{"id": "s1", "tool": "tb_append", "args": {"text": "{kept}"}}],
    ),
    PlanPattern(
        "notes",
        r"^never mind (?P<kept>\w+)\. append (?P<added>\w+)$",
        [{"id": "s1", "tool": "tb_append", "args": {"text": "{added}"}}],
    ),
)


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
        tools={
            # A TTL on a side effect is dropped: it is never cached, whatever is configured.
            "append": McpToolPolicy(identity_args=("text",), cache_ttl_s=60, intents=("notes",)),
            "lookup": McpToolPolicy(cache_ttl_s=900, intents=("lookup",)),
            # No identity arguments: every argument is its target, checked as one.
            "forget": McpToolPolicy(intents=("notes",)),
        },
    )
    return Domain(
        name="mcpdemo",
        tools=(),
        persona="You keep notes with the tools of MCP servers.",
        # Declared with no native tool: the MCP configuration fills them.
        intents={"lookup": (), "notes": ()},
        roles=(
            Role("operator", "runs every tool", may_approve=True, may_send_plans=True),
            Role("viewer", "reads the time", may_send_plans=True),
        ),
        mcp_servers=(toolbox,),
        rules_policy=pattern_policy(*PATTERNS),
    )
