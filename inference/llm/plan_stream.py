"""Steps of a plan as the planner writes them: the reads that may start before it ends.

A plan is a JSON document decoded token by token (`{"rationale": .., "steps": [{..}, ..]}`,
each step as a model writes it: `{"get_item": {"item_id": 1001}}`, `inference.llm.plan_document`).
`StepReader` is fed the text as it arrives and hands out each step the moment its
object closes, when the step is a read that may start now: a known tool that may run
ahead (`schemas.speculation.may_run_ahead`: cached, idempotent, never a side effect), no
`for_each`, `when` or `repeat`, and either arguments valid for it with no `$` reference,
or references (and an `after`) naming only steps handed out before it, which the run
resolves once those return (`workflows.plan_stream`). Whatever else the text holds (a
step still open, a side effect, a reference to a step that will not start early,
malformed or hostile text) hands out nothing; the whole plan is still parsed,
validated and gated after the decode, as without streaming. Each call is handed out once.

The scanner is a few lines of state (nesting, strings, escapes) over the text, so each
piece costs its own length; it stops for good at the first character that cannot be
JSON of that shape, or past `MAX_TEXT_CHARS`.

Where the steps go: a policy decoding a plan hands each to the sink in `STEP_SINK` when
the activity that called it set one (`activities.plan_signals`), so policies that never
stream need no new argument.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar

from pydantic import ValidationError

from agentkeel.inference.engines.strict_schema import strict_document
from agentkeel.inference.llm.plan_document import PlanDocumentError, plan_step
from agentkeel.schemas.plan.model import PlanStep
from agentkeel.schemas.plan.validation import dependencies
from agentkeel.schemas.speculation import (
    MAX_SPECULATIVE_CALLS,
    PredictedCall,
    call_key,
    may_run_ahead,
)
from agentkeel.schemas.tools import TOOLS, ToolSpec

MAX_TEXT_CHARS = 64 * 1024
"""Text past this is not scanned: a plan's token budget is a fraction of it."""

StepSink = Callable[[PredictedCall], Awaitable[None]]
"""Receives each read a planner has written, once, as soon as its step is complete."""

STEP_SINK: ContextVar[StepSink | None] = ContextVar("agentkeel_plan_step_sink", default=None)
"""Where the plan being decoded in this context sends its early reads; None: nowhere."""


class StepReader:
    """The early reads of one plan document, fed its text piece by piece."""

    def __init__(
        self,
        tools: Mapping[str, ToolSpec] = TOOLS,
        *,
        limit: int = MAX_SPECULATIVE_CALLS,
        ready: Iterable[str] = (),
    ) -> None:
        self._tools = tools
        self._limit = limit
        self._text = ""
        self._at = 0
        self._stack: list[str] = []
        self._in_string = self._escaped = False
        self._string_at = -1
        self._last_key: str | None = None
        self._key: str | None = None
        self._in_steps = False
        self._step_at = -1
        self._steps = 0
        """Steps written so far: a step's id is its position (`plan_document.step_id`)."""
        self._stopped = False
        self._seen: set[str] = set()
        self._handed: set[str] = set(ready)
        """Ids of the steps handed out (and of those the planner was given, started
        already: `ready`): a later step that reads only these may follow."""

    def feed(self, text: str) -> list[PredictedCall]:
        """The reads completed by `text` (the next piece of the document), in plan order."""
        if self._stopped:
            return []
        self._text += text
        found: list[PredictedCall] = []
        end = min(len(self._text), MAX_TEXT_CHARS)
        while self._at < end and not self._stopped:
            step = self._scan(self._text[self._at])
            self._at += 1
            if step is not None:
                call = self._early(step)
                if call is not None:
                    found.append(call)
        if len(self._text) > MAX_TEXT_CHARS:
            self._stopped = True
        return found

    def _scan(self, char: str) -> str | None:
        """Advance over one character; the text of a step object it closes, if any."""
        if self._in_string:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
                if len(self._stack) == 1:  # a key (or a value) of the document itself
                    self._last_key = self._decoded(self._string_at, self._at + 1)
            return None
        if char == '"':
            self._in_string, self._string_at = True, self._at
        elif char == ":" and len(self._stack) == 1:
            self._key = self._last_key
        elif char in "{[":
            self._open(char)
        elif char in "}]":
            return self._close(char)
        return None

    def _open(self, char: str) -> None:
        if not self._stack and char != "{":
            self._stopped = True  # a plan is an object
            return
        self._stack.append(char)
        if char == "[" and len(self._stack) == 2 and self._key == "steps":
            self._in_steps = True
        elif char == "{" and self._in_steps and len(self._stack) == 3:
            self._step_at = self._at

    def _close(self, char: str) -> str | None:
        if not self._stack or self._stack[-1] != ("{" if char == "}" else "["):
            self._stopped = True  # not JSON: nothing more is read from it
            return None
        self._stack.pop()
        if char == "]" and self._in_steps and len(self._stack) == 1:
            self._in_steps = False
            self._stopped = True  # every step is written: the rest is not steps
        if char == "}" and self._in_steps and len(self._stack) == 2 and self._step_at >= 0:
            step, self._step_at = self._text[self._step_at : self._at + 1], -1
            self._steps += 1
            return step
        if not self._stack:
            self._stopped = True
        return None

    def _decoded(self, start: int, end: int) -> str | None:
        try:
            value = json.loads(self._text[start:end])
        except ValueError:
            return None
        return value if isinstance(value, str) else None

    def _early(self, text: str) -> PredictedCall | None:
        """The call of a complete step's text, if it is a read that may start now: one
        that waits for nothing, or only for steps handed out already (its references are
        resolved by the run once those return)."""
        if len(self._seen) >= self._limit:
            return None
        try:
            # A strict-mode server writes a step's left-out fields as nulls (`strict_schema`).
            document = strict_document(json.loads(text))
            step = PlanStep.model_validate(plan_step(document, self._steps - 1))
        except (ValueError, PlanDocumentError, ValidationError):
            return None
        spec = self._tools.get(step.tool)
        if spec is None or not may_run_ahead(spec) or not _runs_once(step):
            return None
        waits_for = dependencies(step)
        if _refers_to_item(step.args) or len(waits_for) > MAX_SPECULATIVE_CALLS:
            return None  # `$item` belongs to a fan-out; a step reading more waits for the plan
        if waits_for:
            if not set(waits_for) <= self._handed:
                return None  # it needs a step that will not start early: the plan runs it
            args = dict(step.args)  # references: checked once resolved, by the run
        else:
            try:
                args = spec.checked_args(step.args)
            except ValidationError:
                return None
        key = call_key(spec.name, args)
        if key in self._seen:
            return None
        self._seen.add(key)
        self._handed.add(step.id)
        return PredictedCall(tool=spec.name, args=args, step=step.id, after=waits_for)


def _runs_once(step: PlanStep) -> bool:
    """A step that runs once, as it is written (no fan-out, condition or watch)."""
    return step.for_each is None and step.when is None and step.repeat is None


def _refers_to_item(value: object) -> bool:
    """A `$item` reference: only a fan-out step may hold one."""
    if isinstance(value, str):
        return value.startswith("$item")
    if isinstance(value, dict):
        return any(_refers_to_item(v) for v in value.values())
    if isinstance(value, list):
        return any(_refers_to_item(v) for v in value)
    return False
