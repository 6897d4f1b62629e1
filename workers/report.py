"""Terminal rendering of run results for `agentkeel ask` and `agentkeel demo`."""

from __future__ import annotations

from schemas.result import AgentResult, StepStatus

_MARK = {
    StepStatus.SUCCEEDED: "ok",
    StepStatus.FAILED: "FAILED",
    StepStatus.SKIPPED: "skipped",
    StepStatus.RUNNING: "running",
    StepStatus.PENDING: "pending",
}


def format_result(result: AgentResult) -> str:
    route = result.route
    lines = [
        f"  {result.answer}",
        f"  route: {route.intent} ({route.tier.value}, confidence {route.confidence:.2f})"
        f" · cache: {result.cache.value} · replans: {result.replans}",
    ]
    cached = result.cache.value in ("exact", "semantic")
    if result.cache_match is not None:
        similarity = result.cache_match.similarity
        score = f" (similarity {similarity:.2f})" if similarity is not None else ""
        lines.append(f"  cached from: {result.cache_match.question!r}{score}")
    if cached:
        lines.append("    (steps of the cached run; no tool ran now)")
    for step in result.steps:
        took = ""
        if step.started_at and step.finished_at and not cached:
            took = f" {(step.finished_at - step.started_at).total_seconds() * 1000:.0f} ms"
        width = f" x{len(step.args)}" if isinstance(step.args, list) else ""
        lines.append(f"    {step.id:<4} {step.tool}{width:<4} {_MARK[step.status]}{took}")
    if result.plan_error:
        lines.append(f"  plan rejected: {result.plan_error.type}: {result.plan_error.message}")
    for warning in result.warnings:
        lines.append(f"  warning: {warning}")
    t = result.timings_ms
    lines.append(
        f"  timings ms: cache {t.cache:.0f} · route {t.route:.0f} · plan {t.plan:.0f}"
        f" · tools {t.tools:.0f} · respond {t.respond:.0f} · total {t.total:.0f}"
    )
    return "\n".join(lines)
