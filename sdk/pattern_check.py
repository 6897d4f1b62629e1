"""A domain's `PlanPattern`s checked against its catalog when the domain is built.

A pattern's plan is only instantiated when a question matches it, and the workflow then
refuses a plan that names a tool the catalog lacks, an argument its tool does not take or
a `$ref` field its source does not return. Such a mistake is the domain author's, known
from the declaration alone: it is named here, in one line (the pattern, the step, the
field and what would be valid), before any worker starts, rather than at a run.

Tools of the domain's own MCP servers are listed only when a worker starts: until then a
step naming one (`<server>_<tool>`) is left to the worker's check, made once they are in
the catalog (`check_patterns(..., listed=True)`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from agentkeel.schemas.plan.arguments import reference_fits, reference_type
from agentkeel.schemas.plan.model import PlanStep
from agentkeel.schemas.plan.references import PlanValidationError, Reference, iter_references
from agentkeel.schemas.tools import ToolSpec
from agentkeel.schemas.tools.catalog import BUILT_IN_TOOLS, INTENT_JOINER
from agentkeel.sdk.patterns import PlanPattern

__all__ = ["PatternError", "pattern_problem", "patterns_of"]

_GROUP = re.compile(r"\{(\w+)\}")


class PatternError(ValueError):
    """A pattern that can never plan a run the catalog admits: the message says which."""


def patterns_of(rules_policy: object) -> tuple[PlanPattern, ...]:
    """The patterns a rules policy plans from (`agentkeel.pattern_policy` exposes them);
    none for a policy of another kind."""
    found = getattr(rules_policy, "patterns", ())
    if not isinstance(found, (tuple, list)):
        return ()
    return tuple(p for p in found if isinstance(p, PlanPattern))


def pattern_problem(
    patterns: Sequence[PlanPattern],
    tools: Sequence[ToolSpec],
    intents: Mapping[str, Sequence[str]],
    *,
    pending: tuple[str, ...] = (),
) -> str | None:
    """The first mistake of `patterns` against the catalog `tools` and `intents`, in one
    line; None when every pattern can plan. `pending`: prefixes of tool names not listed
    yet (MCP servers' `server_`), whose steps are checked when they are."""
    catalog = {s.name: s for s in (*tools, *BUILT_IN_TOOLS)}
    for number, pattern in enumerate(patterns, start=1):
        try:
            _check(pattern, catalog, intents, pending)
        except PatternError as exc:
            return f"pattern {pattern.intent!r} (#{number}, /{pattern.pattern}/): {exc}"
    return None


def _check(
    pattern: PlanPattern,
    catalog: Mapping[str, ToolSpec],
    intents: Mapping[str, Sequence[str]],
    pending: tuple[str, ...],
) -> None:
    try:
        regex = re.compile(pattern.pattern, re.IGNORECASE)
    except re.error as exc:
        raise PatternError(f"the regular expression does not compile ({exc})") from None
    asked = pattern.intent.split(INTENT_JOINER)
    for part in asked:
        if part not in intents:
            raise PatternError(
                f"intent {part!r} is not an intent of the domain; known intents: "
                f"{', '.join(sorted(intents)) or 'none'}"
            )
    if not pattern.steps:
        raise PatternError("it has no steps")
    allowed = {tool for part in asked for tool in intents[part]}
    steps = list(_steps(pattern, catalog, pending))
    for number, step in steps:
        where = f"step {number} ({step.id})"
        spec = catalog.get(step.tool)
        if spec is None:  # an MCP tool not listed yet: checked when the worker lists it
            continue
        if not spec.idempotent and step.tool not in allowed:
            raise PatternError(
                f"{where} tool {step.tool!r} is a side effect intent {pattern.intent!r} does "
                f"not list, so every run would refuse it (SideEffectNotRequested); the "
                f"intent lists: {', '.join(sorted(allowed)) or 'nothing'}"
            )
        _check_args(step, spec, where)
        _check_groups(step, regex, where)
        # Any other step of the pattern may be read (the plan's order need not be the
        # DAG's); a step reading itself, or a cycle, is the plan check's to refuse.
        others = {s.id: s for _, s in steps if s.id != step.id}
        _check_refs(step, spec, {**others, step.id: step}, catalog, where)


def _steps(
    pattern: PlanPattern, catalog: Mapping[str, ToolSpec], pending: tuple[str, ...]
) -> Iterator[tuple[int, PlanStep]]:
    seen: set[str] = set()
    for number, raw in enumerate(pattern.steps, start=1):
        try:
            step = PlanStep.model_validate(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(p) for p in error["loc"]) or "the step"
            raise PatternError(
                f"step {number} is not a plan step ({field}: {error['msg']})"
            ) from None
        if step.id in seen:
            raise PatternError(f"step {number}: the id {step.id!r} is used twice")
        seen.add(step.id)
        if step.tool not in catalog and not step.tool.startswith(pending or ("\0",)):
            known = ", ".join(sorted(catalog))
            raise PatternError(
                f"step {number} ({step.id}) tool {step.tool!r} is not in the catalog; "
                f"known tools: {known}"
            )
        for dependency in step.after:
            if dependency not in {s.get("id") for s in pattern.steps}:
                raise PatternError(
                    f"step {number} ({step.id}) comes after {dependency!r}, which is not a "
                    "step of the pattern"
                )
        yield number, step


def _check_args(step: PlanStep, spec: ToolSpec, where: str) -> None:
    fields = spec.args_model.model_fields
    known = ", ".join(fields) or "none"
    for name in step.args:
        if name not in fields:
            raise PatternError(
                f"{where} tool {step.tool} has no argument {name!r}; its arguments: {known}"
            )
    for name, info in fields.items():
        if info.is_required() and name not in step.args:
            raise PatternError(f"{where} tool {step.tool} needs argument {name!r}")


def _check_groups(step: PlanStep, regex: re.Pattern[str], where: str) -> None:
    groups = [*regex.groupindex, *(str(i) for i in range(regex.groups + 1))]
    for name in _placeholders(step.args):
        if name not in groups:
            named = ", ".join(regex.groupindex) or "none"
            raise PatternError(
                f"{where} fills {{{name}}}, which is not a group of the regular expression; "
                f"its named groups: {named}"
            )


def _placeholders(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield from _GROUP.findall(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _placeholders(item)
    elif isinstance(value, list):
        for item in value:
            yield from _placeholders(item)


def _check_refs(
    step: PlanStep,
    spec: ToolSpec,
    by_id: Mapping[str, PlanStep],
    catalog: Mapping[str, ToolSpec],
    where: str,
) -> None:
    tested = [("when", step.when.ref)] if step.when is not None else []
    if step.repeat is not None:
        tested.append(("repeat.until", step.repeat.until.ref))
    if step.for_each is not None:
        tested.append(("for_each", step.for_each))
    for name, value in [*step.args.items(), *tested]:
        for ref in iter_references(value):
            if ref.step is None:
                continue  # `$item.field`: checked against the list when the plan runs
            # A repeated step's `until` reads its own result; nothing else may.
            itself = ref.step == step.id and name != "repeat.until"
            source = None if itself else by_id.get(ref.step)
            if source is None:
                others = ", ".join(s for s in by_id if s != step.id) or "none"
                raise PatternError(
                    f"{where} {name}: {ref} names no other step of the pattern; its steps: {others}"
                )
            if source.tool not in catalog:
                continue
            try:
                found = reference_type(ref, by_id, catalog, step.id)
                target = spec.args_model.model_fields.get(name)
                if target is not None and Reference.parse(value) == ref:
                    reference_fits(step, name, target.annotation, found, ref)
            except PlanValidationError as exc:
                said = exc.message.split(": ", 1)[-1]
                raise PatternError(f"{where} {name}: {said}") from None
