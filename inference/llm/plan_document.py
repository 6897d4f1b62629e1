"""The plan as a model writes it: each step keyed by its tool, its id its position.

A model pays for every token it decodes, and a plan's tokens are most of a run's model
time: at 5 ms a token, the 31 tokens of `{"id": "s1", "tool": "get_item", "args":
{"item_id": 1001}}` cost 155 ms, the 14 of `{"get_item": {"item_id": 1001}}` 70 ms, less
than the same call as a tool call (`{"name": "get_item", "arguments": {...}}`).
So the document a model decodes (`plan_schema`) names each step's tool as the key of its
arguments, and the steps are `s1`, `s2`, ... in the order written; references (`"$s1.x"`),
`after` and the other options read as in `schemas.plan.model.Plan`, which this module
turns the document into. A document in the `Plan` form itself (a caller's, an older
model's) is read as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentkeel.schemas.tools import TOOLS

STEP_OPTIONS = ("after", "for_each", "when", "optional", "repeat")
"""What a step may carry beside its tool and arguments."""


class PlanDocumentError(ValueError):
    """A step names no tool, or more than one; the message says which step and why."""


def step_id(position: int) -> str:
    """The id of the step written at `position` (0-based)."""
    return f"s{position + 1}"


def plan_fields(document: Mapping[str, Any]) -> dict[str, Any]:
    """The `Plan` fields of a model's document (its steps given ids and `tool`/`args`)."""
    fields = dict(document)
    steps = fields.get("steps")
    if isinstance(steps, list):
        fields["steps"] = [plan_step(step, i) for i, step in enumerate(steps)]
    return fields


def plan_step(step: Any, position: int) -> Any:
    """One written step in the `Plan` form; anything that is no step is left for the
    plan's own validation to name."""
    if not isinstance(step, Mapping) or "tool" in step:
        return step  # already the Plan form (or not a step at all)
    tools = [key for key, value in step.items() if key in TOOLS and isinstance(value, Mapping)]
    if len(tools) != 1:
        named = ", ".join(sorted(step)) or "nothing"
        raise PlanDocumentError(
            f"step {position + 1} must name exactly one tool of the catalog, got {named}"
        )
    tool = tools[0]
    options = {key: value for key, value in step.items() if key != tool}
    return {"id": step_id(position), "tool": tool, "args": dict(step[tool]), **options}


def model_document(plan: Mapping[str, Any]) -> dict[str, Any]:
    """A plan in the `Plan` form as a model writes it (for examples shown to models): each
    step's tool as the key of its arguments, its id dropped, references renamed to the
    positions the steps are written at."""
    steps = list(plan.get("steps", []))
    ids = {str(s.get("id")): step_id(i) for i, s in enumerate(steps)}
    written = []
    for step in steps:
        entry: dict[str, Any] = {step["tool"]: renamed(step.get("args", {}), ids)}
        for option in STEP_OPTIONS:
            if option == "after" and "after" in step:
                entry["after"] = [ids.get(str(a), a) for a in step["after"]]
            elif option in step:
                entry[option] = renamed(step[option], ids)
        written.append(entry)
    # In the plan's own order: the answer names steps, so it is written after them.
    document: dict[str, Any] = {k: (written if k == "steps" else v) for k, v in plan.items()}
    answer = document.get("answer")
    if isinstance(answer, str):
        document["answer"] = renamed_text(answer, ids)
    return document


def renamed(value: Any, ids: Mapping[str, str]) -> Any:
    """`value` (arguments, a condition) with each reference to a step of `ids` renamed."""
    if isinstance(value, str):  # only references name steps; other text is kept as is
        return renamed_text(value, ids) if value.startswith("$") else value
    if isinstance(value, list):
        return [renamed(v, ids) for v in value]
    if isinstance(value, Mapping):
        return {k: renamed(v, ids) for k, v in value.items()}
    return value


def renamed_text(text: str, ids: Mapping[str, str]) -> str:
    """`$old.field` -> `$new.field` wherever a reference appears in `text`."""
    return re.sub(
        r"\$([A-Za-z][A-Za-z0-9_]*)", lambda m: "$" + ids.get(m.group(1), m.group(1)), text
    )
