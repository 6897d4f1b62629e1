"""A domain's patterns that name its MCP servers' tools are checked once a worker has
listed them: a misspelt tool stops the worker at start with the one line, naming the
tools the server listed.

The suite's toolbox (`tests/support/mcp_toolbox.py`) is the server, started over stdio as
a worker starts it; no Temporal, Postgres or Redis is needed. (The same domain with the
tool spelt right starts: `tests/fleet/test_mcp_cache.py` serves `tests/domains/mcp_domain`.)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentkeel.settings.mcp_assembly import serve_domain_with_mcp
from agentkeel.settings.model import Settings, SettingsError
from tests.support.paths import ROOT

TOOLBOX = ROOT / "tests" / "support" / "mcp_toolbox.py"

_DOMAIN = """
import sys
from collections.abc import Iterator
from agentkeel import Domain, McpServer, PlanPattern, Role, pattern_policy

def make(tool):
    server = McpServer(name="tb", command=sys.executable, args=({toolbox!r},),
                       env={{"TOOLBOX_STATE": {state!r}}}, roles=("operator",))
    return Domain(
        name="mcpcheck", tools=(), persona="p", intents={{"lookup": ()}},
        roles=(Role("operator", "all", may_approve=True, may_send_plans=True),),
        mcp_servers=(server,),
        rules_policy=pattern_policy(PlanPattern(
            "lookup", r"^look up (?P<key>\\w+)$",
            [{{"id": "s1", "tool": tool, "args": {{"key": "{{key}}"}}}}])),
    )

def misspelt():
    return make("tb_lokup")
"""


@pytest.fixture
def module(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "mcp_check_domain.py").write_text(
        _DOMAIN.format(toolbox=str(TOOLBOX), state=str(tmp_path / "state"))
    )
    sys.path.insert(0, str(tmp_path))
    yield "mcp_check_domain"
    sys.path.remove(str(tmp_path))


async def test_a_misspelt_mcp_tool_in_a_pattern_stops_the_worker_once_listed(
    module: str,
) -> None:
    # Built without the server: the step is left for the worker's check.
    settings = Settings.from_env({"AGENTKEEL_DOMAIN": f"{module}:misspelt"})
    with pytest.raises(SettingsError) as raised:
        async with serve_domain_with_mcp(settings):
            pytest.fail("a worker with a misspelt MCP tool in a pattern must not start")
    said = str(raised.value)
    assert "\n" not in said
    assert "pattern 'lookup' (#1, /^look up (?P<key>\\w+)$/): step 1 (s1) tool 'tb_lokup'" in said
    assert "is not in the catalog; known tools: " in said and "tb_lookup" in said
