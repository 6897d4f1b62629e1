"""`agentkeel calibrate`: the router threshold for a heavy-model share or an error rate the
operator sets, from what the heavy model decided on recorded runs.

A route the router kept (light tier) has no second reading, so only runs the heavy model
planned count: each has the router's confidence (its logprobs' probability, or its
reported confidence, `AGENTKEEL_ROUTE_CONFIDENCE`) and whether the heavy model planned
the intent the router read (`overridden_intent` empty) or another. At a threshold `t`,
the routes below `t` go to the heavy model (the heavy share) and those at or above it
stay light, wrongly where the heavy model read another intent (the error rate, of all
routes). A route whose router said it could not tell is heavy at every threshold.

The runs counted must be a fair sample: routes the router kept at the threshold in force
then are missing from it. Let the heavy model read every request for a while
(`AGENTKEEL_ROUTER_THRESHOLD=1`: everything escalates, nothing is lost but its cost),
then calibrate from that window (`--since`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import timedelta

import asyncpg

__all__ = [
    "Calibration",
    "CurvePoint",
    "RecordedRoute",
    "calibrate",
    "format_calibration",
    "recorded_routes",
]

CURVE_STEP = 0.05
"""The printed curve's thresholds (the chosen one is exact, from the recorded values)."""

_ROUTES_SQL = """
SELECT confidence, overridden_intent
FROM agent_runs
WHERE created_at >= now() - make_interval(secs => $1)
  AND ($2::text IS NULL OR tenant = $2)
  AND tier = 'heavy' AND confidence_basis = $3
"""
_KEPT_SQL = """
SELECT count(*) FROM agent_runs
WHERE created_at >= now() - make_interval(secs => $1)
  AND ($2::text IS NULL OR tenant = $2)
  AND tier = 'light' AND confidence_basis = $3
"""
_UNSURE_INTENT = "unknown"
"""The route's intent where the router said it could not tell (`inference.llm.policy`)."""


@dataclass(frozen=True)
class RecordedRoute:
    confidence: float | None
    """The router's confidence; None where it said it could not tell (always heavy)."""
    agreed: bool
    """The heavy model planned the intent the router read."""


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    heavy_share: float
    error_rate: float
    """Routes kept on the light model that the heavy model read otherwise, of all routes."""


@dataclass
class Calibration:
    routes: int
    kept_uncounted: int = 0
    """Routes the router kept in the window: no heavy reading, so not counted."""
    target: str = ""
    threshold: float | None = None
    """None: no threshold meets the target."""
    at_threshold: CurvePoint | None = None
    curve: list[CurvePoint] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def point(routes: list[RecordedRoute], threshold: float) -> CurvePoint:
    heavy = sum(1 for r in routes if r.confidence is None or r.confidence < threshold)
    wrong = sum(
        1 for r in routes if r.confidence is not None and r.confidence >= threshold and not r.agreed
    )
    n = max(len(routes), 1)
    return CurvePoint(round(threshold, 4), heavy / n, wrong / n)


def calibrate(
    routes: list[RecordedRoute],
    *,
    heavy_share: float | None = None,
    error_rate: float | None = None,
) -> Calibration:
    """The threshold meeting one target: the most routes on the light model whose error rate
    is at most `error_rate`, or the fewest errors whose heavy share is at most `heavy_share`."""
    if (heavy_share is None) == (error_rate is None):
        raise ValueError("calibrate to one target: a heavy-model share or an error rate")
    steps = round(1 / CURVE_STEP)
    result = Calibration(
        routes=len(routes), curve=[point(routes, i / steps) for i in range(steps + 1)]
    )
    measured = sorted({r.confidence for r in routes if r.confidence is not None})
    candidates = [point(routes, t) for t in [0.0, *measured, 1.0]]
    if error_rate is not None:
        result.target = f"error rate <= {error_rate:g}"
        meeting = [p for p in candidates if p.error_rate <= error_rate]
        chosen = min(meeting, key=lambda p: (p.heavy_share, p.threshold), default=None)
    else:
        assert heavy_share is not None
        result.target = f"heavy share <= {heavy_share:g}"
        meeting = [p for p in candidates if p.heavy_share <= heavy_share]
        chosen = min(meeting, key=lambda p: (p.error_rate, p.heavy_share), default=None)
    if routes and chosen is not None:
        result.threshold, result.at_threshold = chosen.threshold, chosen
    return result


async def recorded_routes(
    database_url: str, *, since: timedelta, tenant: str | None, basis: str
) -> tuple[list[RecordedRoute], int]:
    """The heavy model's runs of the window whose route confidence came from `basis`, and
    how many routes the router kept in it (not counted)."""
    conn = await asyncpg.connect(database_url, timeout=10)
    try:
        args = (since.total_seconds(), tenant, basis)
        rows = await conn.fetch(_ROUTES_SQL, *args)
        kept: int = await conn.fetchval(_KEPT_SQL, *args)
    finally:
        await conn.close()
    routes = [
        RecordedRoute(
            confidence=None if r["overridden_intent"] == _UNSURE_INTENT else r["confidence"],
            agreed=r["overridden_intent"] is None,
        )
        for r in rows
        if r["confidence"] is not None or r["overridden_intent"] == _UNSURE_INTENT
    ]
    return routes, kept


def format_calibration(result: Calibration) -> str:
    if not result.routes:
        return "no routes the heavy model read in this window: nothing to calibrate from"
    lines = [f"{result.routes} routes the heavy model read; target: {result.target}"]
    if result.kept_uncounted:
        lines.append(
            f"({result.kept_uncounted} routes the router kept have no heavy reading and are "
            "not counted: calibrate from a window run with AGENTKEEL_ROUTER_THRESHOLD=1)"
        )
    if result.threshold is None or result.at_threshold is None:
        lines.append("no threshold meets the target")
    else:
        at = result.at_threshold
        lines.append(
            f"AGENTKEEL_ROUTER_THRESHOLD={result.threshold:g}  (heavy share "
            f"{at.heavy_share:.0%}, error rate {at.error_rate:.1%})"
        )
    lines += ["", f"  {'threshold':>9} {'heavy share':>11} {'error rate':>10}"]
    for p in result.curve:
        lines.append(f"  {p.threshold:>9.2f} {p.heavy_share:>11.0%} {p.error_rate:>10.1%}")
    return "\n".join(lines)
