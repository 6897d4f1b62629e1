"""Reads the run started from the request, given to the planner as steps it builds on.

A question that names what its first reads need (an order number, an email) has those
reads started at the run's first moment (`workflows.speculation`), before any model has
written a plan. The planner is told of them as steps `p1`, `p2`, ... (`prompt_block`),
so it writes only what comes after them: steps that read their outputs
(`"$p1.owner_id"`), an answer that names them (`{$p1.status}`), and `uses` for one it
keeps for the answer without naming it. A model pays for every token it decodes, and a
plan's first reads are much of its text: at 30 ms a token the 14 tokens of
`{"get_item": {"item_id": 70096}}` cost 420 ms, for a call the run has already made.

A given read the plan does not name is no step of it, and the run cancels it, as it
cancels any speculative read no step makes: a misprediction (a slow read of an order
the answer does not need) never holds the run back. A plan that writes nothing and
names nothing keeps them all: the given reads are its whole plan. A model that does not take the
hint and writes such a read again loses nothing: its step is the same call, so it is
folded into the given step and every reference to it renamed (`with_given`). The given
steps' ids cannot be mistaken for a written step's (those are `s1`, `s2`, ... by
position), so a model's own `$s1` always means its own first step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from agentkeel.inference.llm.plan_document import STEP_OPTIONS, renamed, renamed_text
from agentkeel.schemas.plan.answer_template import placeholders
from agentkeel.schemas.plan.model import Plan, PlanStep
from agentkeel.schemas.plan.validation import dependencies
from agentkeel.schemas.speculation import PredictedCall, call_key, given_id
from agentkeel.schemas.tools.spec import ToolSpec


def given_steps(started: Sequence[PredictedCall]) -> list[PredictedCall]:
    """The started reads as the planner is given them: each with its step id, by position."""
    return [call.model_copy(update={"step": given_id(i)}) for i, call in enumerate(started)]


def prompt_block(given: Sequence[PredictedCall]) -> str:
    """What the planner is told of the given reads (empty without any)."""
    if not given:
        return ""
    lines = "\n".join(
        f"{call.step} {json.dumps({call.tool: call.args}, separators=(', ', ': '))}"
        for call in given
    )
    return (
        "Reads already started from the request, as steps you may use (do not write them "
        'again; read their outputs like any step\'s, as "$p1.status", or {$p1.status} in '
        f"the answer):\n{lines}\n"
        'One your plan does not name is cancelled: list in "uses" those the answer needs '
        "that no step or answer names. Write only the steps that come after them, if any.\n"
    )


def uses_of(written: object) -> list[str]:
    """The given steps a plan's `uses` lists (anything else in it is ignored)."""
    return [u for u in written if isinstance(u, str)] if isinstance(written, list) else []


def with_given(
    plan: Plan,
    given: Sequence[PredictedCall],
    tools: Mapping[str, ToolSpec],
    *,
    uses: Sequence[str] = (),
) -> Plan:
    """`plan` (the steps a model wrote) after the given steps it names: a written step that
    makes a given call (same tool, same arguments, nothing else) is folded into it, and
    every reference to it (arguments, conditions, `after`, the answer) renamed; a given
    step kept is one a step or the answer names, one folded, or one in `uses`."""
    if not given:
        return plan
    by_call = {_call_key(call.tool, call.args, tools): str(call.step) for call in given}
    folded: dict[str, str] = {}
    written: list[PlanStep] = []
    for step in plan.steps:
        same = by_call.get(_plain_call(step, tools) or "")
        if same is not None:
            folded[step.id] = same
        else:
            written.append(step)
    if folded:
        written = [_renamed_step(step, folded) for step in written]
    answer = plan.answer
    if answer is not None and folded:
        answer = renamed_text(answer, folded)
    named = {*folded.values(), *uses, *_named(written, answer)}
    if not written and not named:  # the plan is the given reads alone (no step, no name)
        named = {str(call.step) for call in given}
    first = [
        PlanStep(id=str(call.step), tool=call.tool, args=dict(call.args))
        for call in given
        if call.step in named
    ]
    return plan.model_copy(update={"steps": [*first, *written], "answer": answer})


def _named(steps: Sequence[PlanStep], answer: str | None) -> set[str]:
    """The steps that `steps` wait for and `answer` names."""
    named = {dep for step in steps for dep in dependencies(step)}
    if answer is not None:
        named |= {ref.step for ref, _ in placeholders(answer) if ref.step is not None}
    return named


def _plain_call(step: PlanStep, tools: Mapping[str, ToolSpec]) -> str | None:
    """The call `step` makes, where it is nothing but a call with plain arguments."""
    if any(getattr(step, option) for option in STEP_OPTIONS if option != "optional"):
        return None
    return _call_key(step.tool, step.args, tools)


def _call_key(tool: str, args: Mapping[str, Any], tools: Mapping[str, ToolSpec]) -> str | None:
    spec = tools.get(tool)
    if spec is None:
        return None
    try:  # in the form a started call's arguments take, so they compare equal
        plain = spec.checked_args(args)
    except ValidationError:
        return None  # a reference, or arguments the tool refuses: not a given call
    return call_key(tool, plain)


def _renamed_step(step: PlanStep, ids: Mapping[str, str]) -> PlanStep:
    data = step.model_dump(exclude_unset=True)
    data["args"] = renamed(data.get("args", {}), ids)
    for option in ("for_each", "when", "repeat"):
        if option in data and data[option] is not None:
            data[option] = renamed(data[option], ids)
    if data.get("after"):
        data["after"] = list(dict.fromkeys(ids.get(a, a) for a in data["after"]))
    return PlanStep.model_validate(data)
