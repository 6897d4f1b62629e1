"""Prompts within a token budget: what to keep verbatim, what to summarize, what to drop.

Order is fixed for the prefix cache: the stable system text and tool catalog first,
then the conversation (a summary of older turns, the last few verbatim), then this
call's task. When the whole does not fit, the parts that matter least give way first:
older turns collapse into their facts (entities, IDs, tool results), tool outputs are
projected to fewer items, and only then are turns dropped, oldest first. The system
text and the task itself are never cut.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentkeel.inference.llm.prompts import quoted
from agentkeel.schemas.model_calls import ConversationTurn
from agentkeel.schemas.result import StepError, StepOutcome, StepStatus
from agentkeel.schemas.tools.catalog import TOOLS
from agentkeel.schemas.tools.spec import ToolSpec

TokenCounter = Callable[[str], int]

ID_SUFFIXES = ("_id", "_ids")
"""Keys a summary keeps from any tool's output: the ids later turns refer back to."""


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 3.5 characters per token for English and JSON),
    rounded up so the budget errs towards shorter prompts."""
    return math.ceil(len(text) / 3.5)


def project(value: Any, *, max_items: int, max_chars: int = 160) -> Any:
    """A tool output shrunk for a prompt: lists cut to `max_items`, long strings cut."""
    if isinstance(value, Mapping):
        return {k: project(v, max_items=max_items, max_chars=max_chars) for k, v in value.items()}
    if isinstance(value, list):
        kept = [project(v, max_items=max_items, max_chars=max_chars) for v in value[:max_items]]
        if len(value) > max_items:
            kept.append(f"... {len(value) - max_items} more")
        return kept
    if isinstance(value, str) and len(value) > max_chars:
        return value[:max_chars] + "..."
    return value


def facts_of(
    steps: Sequence[StepOutcome], tools: Mapping[str, ToolSpec] | None = None
) -> dict[str, Any]:
    """The identifying fields of successful tool outputs (for a turn's summary): ids by
    name (`ID_SUFFIXES`), and the fields each tool declares as what a row says of itself
    (the top level of its `trusted_fields`: a status, a total, a due date), from
    the catalog (`tools`, by default the installed domain's)."""
    tools = TOOLS if tools is None else tools
    facts: dict[str, Any] = {}
    for step in steps:
        if step.status != StepStatus.SUCCEEDED:
            continue
        spec = tools.get(step.tool)
        declared = {path.split(".", 1)[0] for path in spec.trusted_fields} if spec else set()
        outputs = step.output if isinstance(step.output, list) else [step.output]
        for output in outputs:
            if isinstance(output, Mapping):
                for key, value in output.items():
                    kept = key.endswith(ID_SUFFIXES) or key in declared
                    if kept and isinstance(value, str | int | float | list):
                        facts.setdefault(key, project(value, max_items=5))
    return facts


@dataclass(frozen=True)
class ContextBuilder:
    """Assembles prompts for one engine within `budget` tokens."""

    budget: int = 3072
    recent_turns: int = 3
    count: TokenCounter = approx_tokens

    def build(
        self,
        prefix: str,
        task: str,
        *,
        history: Sequence[ConversationTurn] = (),
        steps: Sequence[StepOutcome] = (),
        plan_error: StepError | None = None,
    ) -> str:
        """`prefix` + conversation + tool results + `task`, within the budget if possible."""
        fixed = prefix + self._error(plan_error) + task
        room = self.budget - self.count(fixed)
        older = list(history[: -self.recent_turns]) if self.recent_turns else list(history)
        recent = list(history[-self.recent_turns :]) if self.recent_turns else []
        for conversation, results in self._candidates(older, recent, steps):
            if conversation:
                conversation = quoted("conversation", conversation)
            if results:
                results = quoted("tools", results)
            if self.count(conversation + results) <= room:
                return prefix + conversation + results + self._error(plan_error) + task
        return fixed  # even the task alone is over budget: send it, the engine will say so

    def _candidates(
        self,
        older: list[ConversationTurn],
        recent: list[ConversationTurn],
        steps: Sequence[StepOutcome],
    ) -> Iterator[tuple[str, str]]:
        """(conversation, tool results) texts, richest first; each gives up what matters least."""
        for max_items in (5, 2, 1):
            results = self._results(steps, max_items)
            for kept_recent in range(len(recent), -1, -1):
                shown = recent[len(recent) - kept_recent :]
                summarized = older + recent[: len(recent) - kept_recent]
                yield self._summary(summarized) + self._turns(shown), results
        # Then whole turns go, oldest first, from the summary; the results stay.
        least = self._results(steps, 0)
        everything = older + recent
        for dropped in range(1, len(everything) + 1):
            yield self._summary(everything[dropped:]), least

    @staticmethod
    def _turns(turns: Sequence[ConversationTurn]) -> str:
        return "".join(
            f"User: {t.question}\n" + (f"Agent: {t.answer}\n" if t.answer else "") for t in turns
        )

    @staticmethod
    def _summary(turns: Sequence[ConversationTurn]) -> str:
        if not turns:
            return ""
        asked = "; ".join(t.question[:80] for t in turns)
        facts: dict[str, Any] = {}
        for turn in turns:
            facts.update(turn.facts)
        known = f" Known: {json.dumps(facts, separators=(',', ':'))}." if facts else ""
        return f"Earlier in this conversation the user asked: {asked}.{known}\n"

    @staticmethod
    def _results(steps: Sequence[StepOutcome], max_items: int) -> str:
        if not steps:
            return ""
        lines = []
        for step in steps:
            if step.status == StepStatus.SUCCEEDED:
                shown: Any = project(step.output, max_items=max_items)
                body = json.dumps(shown, separators=(",", ":"), default=str)
            elif step.skipped_because:
                body = f"not run: {step.skipped_because}"
            elif step.error is not None:
                body = f"FAILED {step.error.type}: {step.error.message[:160]}"
            else:
                body = step.status.value
            lines.append(f"- {step.id} {step.tool}: {body}")
        return "Tool results:\n" + "\n".join(lines) + "\n"

    @staticmethod
    def _error(plan_error: StepError | None) -> str:
        if plan_error is None:
            return ""
        return (
            f"The previous plan was rejected ({plan_error.type}): {plan_error.message}\n"
            "Write a corrected plan.\n"
        )
