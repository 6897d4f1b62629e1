"""Training the route classifier (`inference.llm.route_classifier`) and measuring it
beside the router's own confidence, on the same recorded routes.

numpy only (the semantic extra brings it, and the embedder the training needs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["fit", "out_of_fold", "roc_auc"]

L2 = 1.0
"""The ridge penalty of the fit: a few hundred runs and 384 dimensions overfit without it."""
FOLDS = 5


def fit(
    vectors: npt.NDArray[np.floating], agreed: npt.NDArray[np.bool_], *, l2: float = L2
) -> tuple[npt.NDArray[np.float64], float]:
    """Weights and bias of an L2-penalized logistic regression of `agreed` on `vectors`,
    by Newton's method (a few hundred rows: exact, and no solver to depend on)."""
    x = np.hstack([np.asarray(vectors, dtype=np.float64), np.ones((len(vectors), 1))])
    y = np.asarray(agreed, dtype=np.float64)
    penalty = np.full(x.shape[1], l2)
    penalty[-1] = 0.0  # the bias is not shrunk
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        gradient = x.T @ (p - y) + penalty * beta
        hessian = (x.T * (p * (1 - p))) @ x + np.diag(penalty) + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def out_of_fold(
    vectors: npt.NDArray[np.floating], agreed: npt.NDArray[np.bool_], *, folds: int = FOLDS
) -> npt.NDArray[np.float64]:
    """Each row's probability from a classifier fitted without it (k folds, in order), so
    the classifier is measured on runs it did not learn from."""
    n = len(vectors)
    scores = np.zeros(n)
    for k in range(min(folds, n)):
        held = np.arange(n) % folds == k
        if held.all() or not held.any():
            continue
        weights, bias = fit(vectors[~held], agreed[~held])
        scores[held] = 1.0 / (1.0 + np.exp(-(np.asarray(vectors[held]) @ weights + bias)))
    return scores


def roc_auc(scores: Sequence[float], agreed: Sequence[bool]) -> float | None:
    """The chance a route the heavy model kept scores above one it changed (ties count
    half); None without both kinds."""
    kept = [s for s, a in zip(scores, agreed, strict=True) if a]
    changed = [s for s, a in zip(scores, agreed, strict=True) if not a]
    if not kept or not changed:
        return None
    wins = sum(1.0 if k > c else 0.5 if k == c else 0.0 for k in kept for c in changed)
    return wins / (len(kept) * len(changed))
