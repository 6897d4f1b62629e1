"""An answer written with the plan: `Plan.answer`, filled from the steps' outputs.

A planner that knows what the answer will say can write it at once, with a placeholder
for every fact a tool will return: `"Ticket {$s1.ticket_id} is {$s1.status}; its account
{$s2.status}."`. When every step succeeded and every placeholder names a plain value, the
workflow fills the template itself and the run needs no respond call: one model stage
less, and every fact in the answer is a tool's output, word for word. Otherwise (a step
failed or was skipped, a value is a record or absent) the respond step writes the answer
as before, so a template can only make a run faster, never wrong.

A placeholder is `{$step.path}` (a reference, as in arguments), optionally with one
format: `{$s1.total_cents|money}` writes cents as `$12.34`. A list of plain values is
written comma-separated. Any other brace is text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from agentkeel.schemas.plan.references import Reference

_PLACEHOLDER = re.compile(r"\{(\$[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)(?:\|([a-z]+))?\}")
FORMATS = frozenset({"money"})
"""`money`: whole cents as dollars and cents (`1999` → `$19.99`)."""
_MAX_LIST = 50


def placeholders(template: str) -> Iterator[tuple[Reference, str | None]]:
    """Each placeholder's reference and format, in order."""
    for match in _PLACEHOLDER.finditer(template):
        ref = Reference.parse(match.group(1))
        if ref is not None:
            yield ref, match.group(2)


def template_problem(template: str, step_ids: frozenset[str]) -> str | None:
    """Why `template` cannot be filled from these steps' outputs, or None."""
    for ref, fmt in placeholders(template):
        if ref.step is None:
            return f"answer template: {ref} is only defined inside a for_each step"
        if ref.step not in step_ids:
            return f"answer template: {ref} names no step of the plan"
        if fmt is not None and fmt not in FORMATS:
            return f"answer template: unknown format {fmt!r} (known: {', '.join(sorted(FORMATS))})"
    return None


def fill(template: str, outputs: Mapping[str, Any]) -> str | None:
    """The template with every placeholder replaced, or None when one does not resolve to
    a plain value (the respond step then writes the answer)."""
    pieces: list[str] = []
    end = 0
    for match in _PLACEHOLDER.finditer(template):
        ref = Reference.parse(match.group(1))
        if ref is None or ref.step is None or ref.step not in outputs:
            return None
        text = _written(_resolve(outputs[ref.step], ref.path), match.group(2))
        if text is None:
            return None
        pieces.append(template[end : match.start()])
        pieces.append(text)
        end = match.end()
    pieces.append(template[end:])
    return "".join(pieces)


_MISSING = object()


def _resolve(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if isinstance(value, Mapping):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _written(value: Any, fmt: str | None) -> str | None:
    if isinstance(value, list):
        if not value or len(value) > _MAX_LIST:
            return None
        parts = [_scalar(item, fmt) for item in value]
        return None if any(p is None for p in parts) else ", ".join(p for p in parts if p)
    return _scalar(value, fmt)


def _scalar(value: Any, fmt: str | None) -> str | None:
    if value is _MISSING or value is None or isinstance(value, Mapping | list):
        return None
    if fmt == "money":
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        sign = "-" if value < 0 else ""
        return f"{sign}${Decimal(abs(value)) / 100:,.2f}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
