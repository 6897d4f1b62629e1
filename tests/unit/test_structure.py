"""The layout's promises: what each layer may import, and names defined once at both ends."""

from __future__ import annotations

import argparse
import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from agentkeel.activities.cache_lookup import CacheActivities
from agentkeel.activities.effects_ledger import EffectLedgerActivities
from agentkeel.activities.hot_questions import WarmingActivities
from agentkeel.activities.latency import LatencyActivities
from agentkeel.activities.local_policy import LocalPolicyActivities
from agentkeel.activities.model_calls import InferenceActivities
from agentkeel.activities.outputs import OutputActivities
from agentkeel.activities.overflow_slots import OverflowSlots
from agentkeel.activities.run_control import RunControlActivities
from agentkeel.activities.run_store import StoreActivities
from agentkeel.activities.watch_slots import WatchSlots
from agentkeel.schemas import names
from agentkeel.schemas.tools import ACTIVITY_TOOLS, TOOLS
from tests.support.paths import ROOT


def _layer(module: str) -> str:
    """The project layer (`schemas`, `workflows`, ...) of an imported module, or its top-level
    package when it is not the project's."""
    parts = module.split(".")
    return parts[1] if parts[0] == "agentkeel" and len(parts) > 1 else parts[0]


def _python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


# The rooms and what each may import (its own folder always). The core is the contracts
# (`schemas`), the domain SDK (`sdk`), `workflows`, `activities` and `inference`; the
# programs (`workers`, `gateway`, `cli`) never import one another: the command line hands
# over to a program with `exec`, and the local stack starts each as its own process.
CORE = ("schemas", "sdk", "workflows", "activities", "inference")
PROGRAMS = ("workers", "gateway", "cli")
MAY_IMPORT: dict[str, frozenset[str]] = {
    "schemas": frozenset(),
    "sdk": frozenset({"schemas"}),
    "workflows": frozenset({"schemas", "sdk"}),
    "inference": frozenset({"schemas", "sdk"}),
    "activities": frozenset({"schemas", "sdk", "inference"}),
    "settings": frozenset(CORE),
    # What services import: the contracts (the wire's and the served domain's), the
    # settings, and nothing of the worker side, the stack or the front doors.
    "client": frozenset({"schemas", "sdk", "settings"}),
    "workers": frozenset({*CORE, "settings"}),
    "gateway": frozenset({*CORE, "settings", "client"}),
    "cli": frozenset({*CORE, "settings", "client"}),
    # A domain is written against the public namespace (`from agentkeel import tool`).
    "examples": frozenset({"agentkeel", "schemas", "sdk", "inference", "client", "settings"}),
}
ROOMS = tuple(MAY_IMPORT)


def _project_imports(room: str) -> list[tuple[Path, str]]:
    """Every `agentkeel.*` module a room's files import, lazily or not, with the file."""
    return [
        (path, module)
        for path in _python_files(room)
        for module in _imported_modules(path)
        if module.split(".")[0] == "agentkeel"
    ]


def test_every_top_level_room_is_a_subpackage_with_import_rules() -> None:
    linked = {p.name for p in (ROOT / "agentkeel").iterdir() if p.is_symlink()}
    assert linked == set(ROOMS)


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_imports_only_what_the_layout_allows(room: str) -> None:
    allowed = MAY_IMPORT[room] | {room}
    broken = [
        f"{path.relative_to(ROOT)} imports {module} ({room} may import only "
        f"{', '.join(sorted(allowed))})"
        for path, module in _project_imports(room)
        if _layer(module) not in allowed
    ]
    assert not broken, "\n".join(broken)


def test_no_program_imports_another() -> None:
    for room in PROGRAMS:
        assert not MAY_IMPORT[room] & set(PROGRAMS), room


def test_the_client_side_loads_no_langgraph_and_no_worker_code() -> None:
    """A service that only starts runs must not pay for (or break on) the worker stack: the
    client reads the caches through the contracts (`schemas.path_cache`), never through the
    activities' cache engine, and loads no inference code."""
    probe = (
        "import sys, agentkeel.client, agentkeel.client.report\n"
        "import agentkeel.client.token_follow, agentkeel.client.agent_client\n"
        "heavy = ('langgraph', 'temporalio.langgraph', 'agentkeel.workflows',\n"
        "         'agentkeel.examples', 'agentkeel.activities', 'agentkeel.inference',\n"
        "         'agentkeel.workers', 'agentkeel.gateway', 'agentkeel.cli.', 'torch', 'vllm')\n"
        "print(sorted({m for m in sys.modules if m.startswith(heavy)}))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_workflow_modules_import_only_the_standard_library_temporal_and_the_contracts() -> None:
    allowed_third_party = {"temporalio", "pydantic", "langgraph", "opentelemetry"}
    for path in _python_files("workflows"):
        for module in _imported_modules(path):
            top = _layer(module)
            if top in sys.stdlib_module_names or top == "workflows":
                continue
            if top == "sdk":  # the served domain's declarations, never its loading or I/O
                assert module in ("agentkeel.sdk.serving", "agentkeel.sdk.domain"), (
                    f"{path.relative_to(ROOT)} imports {module}"
                )
                continue
            if top == "schemas":
                continue
            assert top in allowed_third_party, f"{path.relative_to(ROOT)} imports {module}"
            if top == "langgraph":  # only the graph's definition builds a StateGraph
                assert path.name == "graph.py", f"{path.relative_to(ROOT)} imports {module}"
            if top == "opentelemetry":  # the nodes' spans, through the tracing API alone
                assert module == "opentelemetry" and path.name == "graph.py", (
                    f"{path.relative_to(ROOT)} imports {module}"
                )


def _registered_names(*classes: type) -> set[str]:
    registered: set[str] = set()
    for cls in classes:
        for _, member in inspect.getmembers(cls, inspect.isfunction):
            definition = getattr(member, "__temporal_activity_definition", None)
            if definition is not None:
                registered.add(definition.name)
    return registered


def test_every_activity_name_is_defined_once_in_schemas() -> None:
    """Workers register exactly the names the workflows call: those of `schemas.names`
    and the tool catalog, and nothing else."""
    declared = {
        value
        for key, value in vars(names).items()
        if key.isupper()
        and isinstance(value, str)
        and not key.endswith(("_WORKFLOW", "_QUERY", "_UPDATE", "_SIGNAL"))
    }
    agent_side = _registered_names(
        CacheActivities,
        StoreActivities,
        WarmingActivities,
        InferenceActivities,
        LocalPolicyActivities,
        RunControlActivities,
        OutputActivities,
        LatencyActivities,
        EffectLedgerActivities,
        WatchSlots,
        OverflowSlots,
    )
    assert agent_side == declared
    from agentkeel.activities.tools.functions import FunctionTools
    from agentkeel.workers.stand_ins import activity_name

    served = FunctionTools(ACTIVITY_TOOLS, None, lambda _role: False).all_activities()
    assert {activity_name(a) for a in served} == set(ACTIVITY_TOOLS)
    assert set(TOOLS) - set(ACTIVITY_TOOLS) == {"wait"}  # built-ins run in the workflow


@pytest.mark.parametrize("package", ["workflows", "bench"])
def test_no_activity_is_called_by_a_string_literal(package: str) -> None:
    calls = ("execute_activity", "execute_local_activity", "start_activity")
    for path in _python_files(package):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in calls
                and node.args
            ):
                first = node.args[0]
                assert not (isinstance(first, ast.Constant) and isinstance(first.value, str)), (
                    f"{path.relative_to(ROOT)}:{node.lineno} names an activity by a literal"
                )


def test_no_core_module_imports_an_example_domain() -> None:
    """The core knows a domain only through what it declares: the shop is one domain among
    others, named by a setting's default value alone, never imported."""
    for package in ROOMS:
        if package == "examples":
            continue
        for path in _python_files(package):
            for module in _imported_modules(path):
                assert not module.startswith("agentkeel.examples"), (
                    f"{path.relative_to(ROOT)} imports {module}"
                )


MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 80
SIZED = (*ROOMS, "bench", "tests")


@pytest.mark.parametrize("room", SIZED)
def test_no_module_over_300_lines_and_no_function_over_80(room: str) -> None:
    """Small modules with one concern: a module or function past these sizes is two."""
    too_big = []
    for path in _python_files(room):
        source = path.read_text()
        lines = source.count("\n")
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{path.relative_to(ROOT)}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_big.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length}")
    assert not too_big, "\n".join(too_big)


def test_the_command_lines_dispatch_is_one_table_that_names_every_subcommand() -> None:
    from agentkeel.cli.main import COMMANDS
    from agentkeel.cli.parser import build_parser

    parser = build_parser()
    [subparsers] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(subparsers.choices) == set(COMMANDS)


@pytest.mark.parametrize("room", ROOMS)
def test_rooms_import_each_other_only_by_the_namespace(room: str) -> None:
    """A relative import or a bare `import workers.x` (which works from the repository root
    only) would slip past the rules above."""
    bare = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _python_files(room)
        for node in ast.walk(ast.parse(path.read_text()))
        if (isinstance(node, ast.ImportFrom) and node.level > 0)
        or (
            isinstance(node, ast.Import | ast.ImportFrom)
            and any(
                (name or "").split(".")[0] in ROOMS
                for name in (
                    [node.module]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                )
            )
        )
    ]
    assert not bare, "\n".join(bare)
