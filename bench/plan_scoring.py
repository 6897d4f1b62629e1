"""Scoring one policy's plans against labelled requests (`bench/data/plans.jsonl`).

A row names the tools a right plan calls (`tools`), the literal arguments they must get
(`args`, by tool), the side effects the request allows (`effects`; empty: none), and for a
`replan` row the step that failed in the first round (`replan.failed`). The figures:

- valid: the plan came back without a plan error and passes the catalog's validation;
- exact: valid, with exactly the labelled tools, each labelled argument given literally;
- tool precision / recall: over all rows, of the (row, tool) pairs planned and labelled;
- wrong side effects: rows whose plan calls a side-effecting tool the row does not allow
  (the workflow's authority checks would stop it; the plan still should not ask);
- grounded: of the answers scored, those whose every number and ID comes from the
  question or a tool output (`plan_outputs`).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.plan.validation import PlanValidationError, validate_plan
from agentkeel.schemas.tools import TOOLS

KINDS = ("single", "multi", "no_effect", "replan")
FACT = re.compile(r"\b[A-Z]{2,4}-?\d{3,}\b|\d+(?:[.,]\d+)?")
"""What counts as a fact in an answer: numbers (amounts, counts, dates' parts) and IDs."""


@dataclass(frozen=True)
class Row:
    id: str
    question: str
    kind: str
    blind: bool
    """Written without looking at the rules policy's keywords and templates."""
    tools: frozenset[str]
    args: Mapping[str, Mapping[str, Any]]
    effects: frozenset[str]
    replan: Mapping[str, Any] | None = None
    outputs: Mapping[str, Any] | None = None


def load_rows(path: Path) -> list[Row]:
    rows = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        rows.append(
            Row(
                id=raw["id"],
                question=raw["question"],
                kind=raw["kind"],
                blind=bool(raw.get("blind")),
                tools=frozenset(raw["tools"]),
                args=raw.get("args", {}),
                effects=frozenset(raw.get("effects", ())),
                replan=raw.get("replan"),
                outputs=raw.get("outputs"),
            )
        )
    return rows


@dataclass
class Scored:
    row: Row
    valid: bool
    tools: frozenset[str]
    exact: bool
    wrong_side_effect: bool
    ms: float
    grounded: bool | None

    def brief(self) -> str:
        """One line for a progress log: the verdicts and the tools chosen."""
        return (
            f"valid={self.valid} exact={self.exact} wrong_side_effect={self.wrong_side_effect} "
            f"grounded={self.grounded} {self.ms:.0f} ms tools={sorted(self.tools)}"
        )


def score_plan(row: Row, plan: Plan | None, error: bool, ms: float) -> Scored:
    valid = plan is not None and not error and _validates(plan)
    tools = frozenset(s.tool for s in plan.steps) if plan is not None else frozenset()
    exact = valid and tools == row.tools and _literal_args(row, plan)
    side = {t for t in tools if t in TOOLS and not TOOLS[t].idempotent}
    return Scored(row, valid, tools, exact, bool(side - row.effects), ms, None)


def grounded(answer: str, question: str, outputs: Iterable[Any]) -> bool:
    known = question + json.dumps(list(outputs), default=str)
    plain = known.replace(",", "")
    for fact in FACT.findall(answer):
        number = fact.replace(",", "")
        if fact not in known and number not in plain and not _as_cents(number, plain):
            return False
    return True


def _as_cents(number: str, known: str) -> bool:
    """ "$45.99" in an answer is grounded by `4599` cents in an output."""
    try:
        return str(round(float(number) * 100)) in known
    except ValueError:
        return False


def _validates(plan: Plan) -> bool:
    try:
        validate_plan(plan, TOOLS)
    except PlanValidationError:
        return False
    return True


def _literal_args(row: Row, plan: Plan | None) -> bool:
    assert plan is not None
    for tool, wanted in row.args.items():
        calls = [s.args for s in plan.steps if s.tool == tool]
        if not any(all(call.get(k) == v for k, v in wanted.items()) for call in calls):
            return False
    return True


@dataclass
class Summary:
    n: int
    valid: float
    exact: float
    tool_precision: float
    tool_recall: float
    wrong_side_effects: int
    grounded: float | None
    p50_ms: float
    by_kind: dict[str, float] = field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        keys = (
            "n",
            "valid",
            "exact",
            "tool_precision",
            "tool_recall",
            "wrong_side_effects",
            "grounded",
            "p50_ms",
        )
        return {k: getattr(self, k) for k in keys}


def summarize(scored: Sequence[Scored]) -> Summary:
    planned = sum(len(s.tools) for s in scored)
    labelled = sum(len(s.row.tools) for s in scored)
    hits = sum(len(s.tools & s.row.tools) for s in scored)
    answers = [s.grounded for s in scored if s.grounded is not None]
    n = len(scored) or 1
    by_kind = {}
    for kind in KINDS:
        of_kind = [s for s in scored if s.row.kind == kind]
        if of_kind:
            by_kind[kind] = round(sum(s.exact for s in of_kind) / len(of_kind), 3)
    return Summary(
        n=len(scored),
        valid=round(sum(s.valid for s in scored) / n, 3),
        exact=round(sum(s.exact for s in scored) / n, 3),
        tool_precision=round(hits / planned, 3) if planned else 1.0,
        tool_recall=round(hits / labelled, 3) if labelled else 1.0,
        wrong_side_effects=sum(s.wrong_side_effect for s in scored),
        grounded=round(sum(answers) / len(answers), 3) if answers else None,
        p50_ms=round(statistics.median(s.ms for s in scored), 1) if scored else 0.0,
        by_kind=by_kind,
    )
