"""agentkeel's plan document as the ideal model of the peer benchmarks writes it.

The plan of a bench question (`bench.peer_cases`) in the schema agentkeel's LLM policy asks
for: ids by position (or each step's `id`, in a patch of the round before), `$ref` data
flow, an `intent` and an `answer` template where the schema has them; where the planner
is given steps already in the plan (`p1 {"get_order": ...}` lines, the reads the run
started from the request), only the other steps, reading the given ones.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bench.peer_cases import Step, case_in, corrected, plan_of, reading

UNSURE = "uncertain"


def intent_of(labels: list[str]) -> str:
    """The shop intent the bench shapes' reads serve; the first sure label otherwise."""
    for preferred in ("order_status", "policy"):
        if preferred in labels:
            return preferred
    return next((label for label in labels if label != UNSURE), labels[0])


def reading_document(conversation: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The plan of the conversation's question as it now reads it. A patch of the round
    before (the schema asks each step for its id) holds only the steps that differ from
    the misread plan; its answer is the whole plan's. A planner given steps already in
    the plan (`inference.llm.given_reads`) writes only the others, reading the given ones."""
    plan = reading(conversation)
    steps = plan
    case = case_in(conversation)
    given = _given_calls(conversation)
    if given:
        plan = _after_given(plan, given)
        steps = [step for step in plan if step.id not in given.values()]
        # The given steps it needs that neither its steps nor its answer name: `uses`.
        named = {dep for step in steps for dep in step.deps} | {plan[-1].id}
        uses = [step.id for step in plan if step.id in given.values() and step.id not in named]
        return _plan_document(steps, schema, answer_of=plan, uses=uses)
    if _patch_form(schema) and case.wrong_once and corrected(case, conversation):
        misread = plan_of(case, misread=True)
        steps = [step for step in plan if step not in misread]
        # As the planner is told (`PATCH_INSTRUCTION`): the answer written before stands
        # unless a step it names is gone, so a patch that only replaces steps writes none.
        replaces = {step.id for step in steps} <= {step.id for step in misread}
        return _plan_document(steps, schema, answer_of=None if replaces else plan)
    return _plan_document(steps, schema, answer_of=plan)


_GIVEN_LINE = re.compile(r"^(p[0-9]+) (\{.*\})$", re.MULTILINE)


def _given_calls(conversation: str) -> dict[str, str]:
    """The calls the planner was told are steps already (one line each, `p1 {"tool":
    {args}}`), keyed by the call, to their ids."""
    given: dict[str, str] = {}
    for step_id, text in _GIVEN_LINE.findall(conversation):
        try:
            ((tool, args),) = json.loads(text).items()
        except (ValueError, AttributeError):
            continue
        given[_call(tool, args)] = step_id
    return given


def _call(tool: str, args: dict[str, Any]) -> str:
    return json.dumps([tool, {k: str(v) for k, v in args.items()}], sort_keys=True)


def _after_given(plan: list[Step], given: dict[str, str]) -> list[Step]:
    """`plan` with each step that makes a given call under the given id, and the others
    numbered in order as the model writes them, every reference renamed."""
    ids: dict[str, str] = {}
    for step in plan:
        same = None if step.deps else given.get(_call(step.tool, step.args))
        ids[step.id] = same or f"s{sum(1 for v in ids.values() if v.startswith('s')) + 1}"

    def named(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            head, dot, rest = value[1:].partition(".")
            return f"${ids.get(head, head)}{dot}{rest}"
        return value

    return [
        Step(
            ids[s.id],
            s.tool,
            {k: named(v) for k, v in s.args.items()},
            tuple(ids[a] for a in s.after),
        )
        for s in plan
    ]


def _step_forms(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties", {})
    forms = properties.get("steps", {}).get("items", {}).get("anyOf", [{}])
    found: dict[str, Any] = forms[0].get("properties", {})
    return found


def _patch_form(schema: dict[str, Any]) -> bool:
    forms = _step_forms(schema)
    return "tool" not in forms and "id" in forms


def _plan_document(
    steps: list[Step],
    schema: dict[str, Any],
    *,
    answer_of: list[Step] | None = None,
    uses: list[str] | None = None,
) -> dict[str, Any]:
    """`steps` as agentkeel's plan schema asks for them, in the schema's order and its step
    form: each step keyed by its tool (ids by position, or its `id` first where the schema
    asks for one: a patch), or `{id, tool, args}`; the answer template of `answer_of` (of
    `steps` for a whole plan; none for a patch without `answer_of`)."""
    properties = schema.get("properties", {})
    keyed_by_tool = "tool" not in _step_forms(schema)
    patch = _patch_form(schema)
    written_steps = []
    for step in steps:
        written: dict[str, Any] = (
            {**({"id": step.id} if patch else {}), step.tool: step.args}
            if keyed_by_tool
            else {"id": step.id, "tool": step.tool, "args": step.args}
        )
        if step.after:
            written["after"] = list(step.after)
        written_steps.append(written)
    values: dict[str, Any] = {
        "intent": intent_of(properties.get("intent", {}).get("enum", [UNSURE])),
        "rationale": f"{len(steps)} lookups",
        "steps": written_steps,
    }
    if uses:
        values["uses"] = uses
    if answer_of is not None or not patch:
        values["answer"] = _answer_template(answer_of or steps)
    return {name: values[name] for name in properties if name in values}


_ANSWER_FIELD = {
    "search_kb": "query",
    "get_order": "status",
    "check_inventory": "sku",
    "track_shipment": "status",
}
"""A field every result of each tool has, for the answer template."""


def _answer_template(steps: list[Step]) -> str:
    """One short sentence with the last step's fact: about as long as the answer a
    tool-calling model writes (`ANSWER`)."""
    last = steps[-1]
    return f"Found: {{${last.id}.{_ANSWER_FIELD[last.tool]}}}."
