"""The docs that describe the code are made from it: the layout map from every module's
docstring, the flow diagram from the compiled graph. A test fails when either drifts;
`python -m tests.unit.test_docs_sync --write` rewrites both from the tree."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from tests.support.paths import ROOT

LAYOUT = ROOT / "docs" / "layout.md"
FLOW_PAGES = (ROOT / "README.md", ROOT / "docs" / "architecture.md")

# The rooms, in the order a reader meets them: the core, then what is built on it.
ROOMS = {
    "schemas": "the wire contracts: pydantic models and the names in every run's history",
    "sdk": "the domain SDK: what a business writes its domain against",
    "workflows": "orchestration only (deterministic): AgentWorkflow, the graph, the DAG scheduler",
    "activities": "all I/O on the worker side: tools, caches, the run record, the ledger",
    "inference": "models behind the Policy interface: engines, the LLM policy, the cascade",
    "settings": "typed settings and what every process builds from them at start",
    "client": "what services import to call agentkeel",
    "workers": "the worker runtime: the CPU and inference worker processes",
    "gateway": "the front doors: the HTTP/SSE gateway and the MCP server",
    "cli": "the `agentkeel` command line and the local stack it starts",
    "examples": "example domains (the shop); the core never imports them",
}
MAX_CHARS = 150
FLOW_START = "<!-- flow: made from workflows/graph.py by tests/unit/test_docs_sync.py -->"
FLOW_END = "<!-- /flow -->"


def _first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    match = re.match(r"(.+?\.)(\s|$)", paragraph)
    sentence = (match.group(1) if match else paragraph).rstrip(".")
    if len(sentence) > MAX_CHARS:
        sentence = sentence[:MAX_CHARS].rsplit(" ", 1)[0] + " …"
    return sentence.replace("|", "\\|")


def layout_map() -> str:
    lines = [
        "# Layout: every module and why it exists",
        "",
        "Made from the tree by `python -m tests.unit.test_docs_sync --write` (each line is the",
        "first sentence of the module's docstring); `tests/unit/test_docs_sync.py` fails when",
        "a module is added, moved or re-described without it. The rooms and their import",
        "rules are in [architecture.md](architecture.md#layout-one-room-per-program).",
        "",
    ]
    for room, purpose in ROOMS.items():
        lines += [f"## `{room}/`: {purpose}", "", "| module | why it exists |", "| --- | --- |"]
        for path in sorted((ROOT / room).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            lines.append(f"| `{name}` | {_first_sentence(path)} |")
        lines.append("")
    return "\n".join(lines)


def flow_diagram() -> str:
    from agentkeel.workflows.graph import build_agent_graph

    graph = build_agent_graph().compile().get_graph()
    names = {"__start__": "start([start])", "__end__": "done([end])"}
    lines = ["```mermaid", "flowchart TD"]
    for edge in graph.edges:
        source = names.get(edge.source, edge.source)
        target = names.get(edge.target, edge.target)
        label = f"|{edge.data}|" if edge.conditional and edge.data else ""
        lines.append(f"    {source} -->{label} {target}")
    lines.append("```")
    return "\n".join(lines)


def _with_flow(text: str, diagram: str) -> str:
    start, end = text.index(FLOW_START), text.index(FLOW_END)
    return text[: start + len(FLOW_START)] + "\n" + diagram + "\n" + text[end:]


def test_the_layout_map_names_every_module_with_its_docstring() -> None:
    assert LAYOUT.read_text() == layout_map(), (
        "docs/layout.md is not the tree's: run `python -m tests.unit.test_docs_sync --write`"
    )


def test_the_flow_diagrams_are_the_compiled_graph() -> None:
    diagram = flow_diagram()
    for page in FLOW_PAGES:
        text = page.read_text()
        assert FLOW_START in text and FLOW_END in text, f"{page.name} has no flow block"
        assert _with_flow(text, diagram) == text, (
            f"{page.relative_to(ROOT)}'s flow is not the graph's: "
            "run `python -m tests.unit.test_docs_sync --write`"
        )


def _room_table() -> dict[str, set[str]]:
    """architecture.md's table of rooms: each room and the rooms its last column names."""
    from tests.unit.test_structure import CORE

    table: dict[str, set[str]] = {}
    for line in (ROOT / "docs" / "architecture.md").read_text().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) != 3 or not re.fullmatch(r"`[a-z]+/`", cells[0]):
            continue
        named = set(re.findall(r"`([a-z]+)(?:\.[a-z]+)*`", cells[2]))
        table[cells[0].strip("`/")] = named | (set(CORE) if "the core" in cells[2] else set())
    return table


def test_the_architectures_room_table_is_the_import_rules_test() -> None:
    from tests.unit.test_structure import MAY_IMPORT

    assert _room_table() == {room: set(allowed) for room, allowed in MAY_IMPORT.items()}


def test_every_room_is_in_the_map_and_linked_into_the_namespace() -> None:
    linked = {p.name for p in (ROOT / "agentkeel").iterdir() if p.is_symlink()}
    assert linked == set(ROOMS)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    LAYOUT.write_text(layout_map())
    for page in FLOW_PAGES:
        page.write_text(_with_flow(page.read_text(), flow_diagram()))
