"""Terminal rendering of run results for `agentkeel ask` and `agentkeel demo`."""

from __future__ import annotations

from datetime import datetime
from typing import TextIO

from agentkeel.client.token_follow import AnswerView, ViewChange
from agentkeel.schemas.result import ANSWER_HITS, AgentResult, StepStatus
from agentkeel.schemas.route import Route, Tier
from agentkeel.schemas.tokens import CANCELLED_TEXT, TokenEvent

RESTARTED_MARK = "[answer restarted: model retried]"

_MARK = {
    StepStatus.SUCCEEDED: "ok",
    StepStatus.FAILED: "FAILED",
    StepStatus.SKIPPED: "skipped",
    StepStatus.RUNNING: "running",
    StepStatus.PENDING: "pending",
}


class StreamedAnswer:
    """Writes the answer to a terminal as its tokens arrive (`on_event`), then `close()`s."""

    def __init__(self, out: TextIO) -> None:
        self.view = AnswerView()
        self._out = out
        self._shown = False
        """Whether any text is on the screen: a restart needs saying only then."""

    def on_event(self, event: TokenEvent) -> None:
        change = self.view.apply(event)
        if change is ViewChange.RESTARTED and self._shown:
            self._write(f"\n  {RESTARTED_MARK}\n  {self.view.text}")
        elif change is ViewChange.APPENDED:
            self._write(event.text if self._shown else f"  {event.text}")
            self._shown = True
        elif change is ViewChange.CANCELLED:
            self._write(f"{chr(10) if self._shown else ''}  [{CANCELLED_TEXT}]")
            self._shown = True

    def close(self, answer: str | None) -> bool:
        """End the streamed line; True if what was shown is `answer`, so not to repeat it.

        `answer=None`: the run failed, there is no answer to compare with.
        """
        if not self._shown:
            return False
        self._write("\n")
        if answer is None:
            return False
        if self.view.text.strip() == answer.strip():
            return True
        # The stream broke off (or missed a retry): the result is the answer.
        self._write("  [the streamed text was incomplete; the answer:]\n")
        return False

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()


def went_wrong(result: AgentResult) -> bool:
    """A run that answered but whose plan was rejected or a step failed (exit status 1)."""
    return result.plan_error is not None or any(s.status == StepStatus.FAILED for s in result.steps)


def _confidence(route: Route) -> str:
    """A probability only where one was measured; else where the decision came from."""
    measured = route.measured_confidence
    if measured is not None:
        return f"confidence {measured:.2f}"
    return f"confidence: {route.basis.value if route.basis else 'unstated'}"


def format_result(
    result: AgentResult, *, answer_shown: bool = False, run_started: datetime | None = None
) -> str:
    """The result for a terminal; `answer_shown`: it was streamed already, so leave it out.

    Each step that ran now shows how long it took and when it started, in ms after
    `run_started` (the run's start; None: after the first step's), so steps that ran in
    parallel show the same start."""
    route = result.route
    lines = [] if answer_shown else [f"  {result.answer}"]
    lines.append(
        f"  route: {route.intent} ({route.tier.value}, {_confidence(route)})"
        f" · cache: {result.cache.value} · replans: {result.replans}"
    )
    if route.tier in (Tier.LIGHT, Tier.HEAVY):
        lines.append(f"  why this tier: {route.reason}")
    cached = result.cache in ANSWER_HITS
    if result.cache_match is not None:
        similarity = result.cache_match.similarity
        score = f" (similarity {similarity:.2f})" if similarity is not None else ""
        lines.append(f"  cached from: {result.cache_match.question!r}{score}")
    if cached:
        lines.append("    (steps of the cached run; no tool ran now)")
    starts = [s.started_at for s in result.steps if s.started_at is not None]
    base = run_started or (min(starts) if starts else None)
    for step in result.steps:
        took = ""
        if step.started_at and step.finished_at and not cached:
            took = f" {(step.finished_at - step.started_at).total_seconds() * 1000:.0f} ms"
            if base is not None:
                took += f", started at +{(step.started_at - base).total_seconds() * 1000:.0f} ms"
        width = f" x{len(step.args)}" if isinstance(step.args, list) else ""
        lines.append(f"    {step.id:<4} {step.tool}{width:<4} {_MARK[step.status]}{took}")
    if result.plan_error:
        lines.append(f"  plan rejected: {result.plan_error.type}: {result.plan_error.message}")
    for record in result.approvals:
        asked = record.request
        verdict = (
            "declined: nobody decided in time"
            if record.timed_out
            else "cancelled while it waited"
            if record.cancelled
            else f"{'approved' if record.approved else 'rejected'} by {record.approver}"
        )
        why = (
            f" ({record.reason})"
            if record.reason and not (record.timed_out or record.cancelled)
            else ""
        )
        lines.append(f"  approval: {asked.tool} {asked.call_id} {verdict}{why}")
    for warning in result.warnings:
        lines.append(f"  warning: {warning}")
    t = result.timings_ms
    lines.append(
        f"  timings ms: cache {t.cache:.0f} · route {t.route:.0f} · plan {t.plan:.0f}"
        f" · tools {t.tools:.0f} · respond {t.respond:.0f} · total {t.total:.0f}"
        + (f" · first token {t.ttft:.0f}" if t.ttft is not None else "")
    )
    return "\n".join(lines)
