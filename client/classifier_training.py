"""`agentkeel route-classifier FILE`: train the route classifier from recorded runs, and say
whether it measures better than the router's own confidence on the same runs.

The runs are those the heavy model planned after a router read them (a label and a
confidence from its logprobs, its report or a classifier): each is a request whose intent
the heavy model kept or changed. The classifier is measured out of fold (`FOLDS` fits,
each scored on the runs it did not see), the router's confidence as recorded, both by
ROC AUC: the chance a route the heavy model kept scores above one it changed. As for
`agentkeel calibrate`, the window should be one where the heavy model read every request
(`AGENTKEEL_ROUTER_THRESHOLD=1`): routes the router kept have no second reading.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np

from agentkeel.client.route_training import fit, out_of_fold, roc_auc
from agentkeel.schemas.route_classifier import RouteClassifier, TextEmbedder

__all__ = ["TrainingReport", "TrainingRoute", "format_training", "recorded", "train"]

FEWEST_ROUTES = 20
"""Below this, or without routes of both kinds, nothing is trained."""

_SQL = """
SELECT question, confidence, confidence_basis, overridden_intent
FROM agent_runs
WHERE created_at >= now() - make_interval(secs => $1)
  AND ($2::text IS NULL OR tenant = $2)
  AND tier = 'heavy' AND question IS NOT NULL AND question <> ''
  AND confidence_basis IN ('logprobs', 'reported', 'classifier')
  AND overridden_intent IS DISTINCT FROM 'unknown'
"""
"""`unknown`: the router said it could not tell; it read no intent to keep or change."""


@dataclass(frozen=True)
class TrainingRoute:
    question: str
    confidence: float
    basis: str
    agreed: bool
    """The heavy model planned the intent the router read."""


@dataclass
class TrainingReport:
    routes: int
    agreed_share: float = 0.0
    classifier_auc: float | None = None
    """Out of fold."""
    router_auc: dict[str, float | None] = field(default_factory=dict)
    """The router's recorded confidence, per basis, on that basis's routes."""
    verdict: str = ""


async def recorded(
    database_url: str, *, since: timedelta, tenant: str | None
) -> list[TrainingRoute]:
    conn = await asyncpg.connect(database_url, timeout=10)
    try:
        rows = await conn.fetch(_SQL, since.total_seconds(), tenant)
    finally:
        await conn.close()
    return [
        TrainingRoute(
            question=r["question"],
            confidence=float(r["confidence"] or 0.0),
            basis=r["confidence_basis"],
            agreed=r["overridden_intent"] is None,
        )
        for r in rows
    ]


async def train(
    routes: list[TrainingRoute], embedder: TextEmbedder
) -> tuple[RouteClassifier | None, TrainingReport]:
    """The classifier fitted on every route (None when too few, or all of one kind) and
    how it measures beside the router's own confidence."""
    report = TrainingReport(routes=len(routes))
    agreed = np.array([r.agreed for r in routes], dtype=bool)
    if len(routes) < FEWEST_ROUTES or agreed.all() or not agreed.any():
        report.verdict = (
            f"{len(routes)} routes, {int(agreed.sum())} kept by the heavy model: "
            f"training needs {FEWEST_ROUTES} or more, of both kinds"
        )
        return None, report
    vectors = await asyncio.to_thread(embedder.embed, [r.question for r in routes])
    report.agreed_share = float(agreed.mean())
    scores = await asyncio.to_thread(out_of_fold, vectors, agreed)
    report.classifier_auc = roc_auc(scores.tolist(), agreed.tolist())
    for basis in sorted({r.basis for r in routes}):
        mine = [r for r in routes if r.basis == basis]
        report.router_auc[basis] = roc_auc([r.confidence for r in mine], [r.agreed for r in mine])
    report.verdict = _verdict(report)
    weights, bias = await asyncio.to_thread(fit, vectors, agreed)
    classifier = RouteClassifier(
        embedder=embedder.identity,
        weights=[float(w) for w in weights],
        bias=bias,
        routes=len(routes),
        agreed_share=report.agreed_share,
        trained_at=datetime.now(UTC),
    )
    return classifier, report


def _verdict(report: TrainingReport) -> str:
    ours = report.classifier_auc
    measured = {b: auc for b, auc in report.router_auc.items() if auc is not None}
    if ours is None or not measured:
        return "not enough of both kinds to compare"
    basis, theirs = max(measured.items(), key=lambda item: item[1])
    if ours > theirs:
        return (
            f"the classifier measures better than the router's {basis} confidence "
            f"(AUC {ours:.2f} against {theirs:.2f}): AGENTKEEL_ROUTE_CONFIDENCE=classifier"
        )
    return (
        f"the router's {basis} confidence measures better than the classifier "
        f"(AUC {theirs:.2f} against {ours:.2f}): keep AGENTKEEL_ROUTE_CONFIDENCE={basis}"
    )


def format_training(report: TrainingReport, written: str | None) -> str:
    lines = [f"{report.routes} routes the heavy model read after the router"]
    if report.classifier_auc is not None:
        lines.append(
            f"  heavy model kept the router's intent: {report.agreed_share:.0%}\n"
            f"  classifier AUC (out of fold): {report.classifier_auc:.3f}"
        )
        for basis, auc in report.router_auc.items():
            shown = f"{auc:.3f}" if auc is not None else "n/a (one kind only)"
            lines.append(f"  router's {basis} confidence AUC: {shown}")
    lines.append(report.verdict)
    if written:
        lines.append(f"wrote {written}: AGENTKEEL_ROUTE_CLASSIFIER={written}")
    return "\n".join(lines)


def report_json(report: TrainingReport, written: str | None) -> str:
    return json.dumps({**asdict(report), "written": written}, indent=2)
