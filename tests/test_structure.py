"""The layout's promises: what each layer may import, and names defined once at both ends."""

from __future__ import annotations

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
from agentkeel.activities.run_control import RunControlActivities
from agentkeel.activities.run_store import StoreActivities
from agentkeel.schemas import names
from agentkeel.schemas.tools import ACTIVITY_TOOLS, TOOLS

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("workflows", "activities", "workers", "inference", "schemas")


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


def test_the_client_side_loads_no_langgraph_and_no_policy_code() -> None:
    """A service that only starts runs must not pay for (or break on) the worker stack."""
    probe = (
        "import sys, agentkeel.workers.client, agentkeel.workers.client.report\n"
        "import agentkeel.workers.client.token_follow\n"
        "heavy = ('langgraph', 'temporalio.langgraph', 'agentkeel.workflows',\n"
        "         'agentkeel.examples', 'agentkeel.inference.llm.policy',\n"
        "         'agentkeel.activities.tools', 'torch', 'vllm')\n"
        "print(sorted({m for m in sys.modules if m.startswith(heavy)}))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_workflow_modules_import_only_the_standard_library_temporal_and_schemas() -> None:
    allowed_third_party = {"temporalio", "pydantic", "langgraph", "opentelemetry"}
    for path in _python_files("workflows"):
        for module in _imported_modules(path):
            top = _layer(module)
            if top in sys.stdlib_module_names or top in ("schemas", "workflows"):
                continue
            assert top in allowed_third_party, f"{path.relative_to(ROOT)} imports {module}"
            if top == "langgraph":  # only the graph's definition builds a StateGraph
                assert path.name == "graph.py", f"{path.relative_to(ROOT)} imports {module}"
            if top == "opentelemetry":  # the nodes' spans, through the tracing API alone
                assert module == "opentelemetry" and path.name == "graph.py", (
                    f"{path.relative_to(ROOT)} imports {module}"
                )


def test_schemas_import_no_other_layer() -> None:
    for path in _python_files("schemas"):
        for module in _imported_modules(path):
            top = _layer(module)
            assert top not in PROJECT_PACKAGES or top == "schemas", (
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
    for package in PROJECT_PACKAGES:
        for path in _python_files(package):
            for module in _imported_modules(path):
                assert not module.startswith("agentkeel.examples"), (
                    f"{path.relative_to(ROOT)} imports {module}"
                )
