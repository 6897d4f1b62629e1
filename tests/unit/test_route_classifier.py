"""The router's confidence from a classifier over the request's embedding
(`AGENTKEEL_ROUTE_CONFIDENCE=classifier`): fitted and measured from recorded routes, then
routing over the real OpenAI-compatible engine against a server that returns no logprobs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

np = pytest.importorskip("numpy", reason="the semantic extra (the training needs numpy)")

from agentkeel.client.classifier_training import FEWEST_ROUTES, TrainingRoute, train  # noqa: E402
from agentkeel.client.route_training import fit, out_of_fold, roc_auc  # noqa: E402
from agentkeel.inference.llm.route_classifier import classifier_scorer  # noqa: E402
from agentkeel.schemas.route_classifier import RouteClassifier  # noqa: E402

if TYPE_CHECKING:
    from agentkeel.activities.cache.semantic.embedder import Embedder

SURE = "Where is order 1001?"
UNSURE = "My parcel, the one from last week, what about it?"


def test_the_fit_learns_a_separable_rule_and_not_noise() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(200, 16))
    agreed = vectors[:, 3] + 0.5 * vectors[:, 5] > 0
    scores = out_of_fold(vectors, agreed)
    learned = roc_auc(scores.tolist(), agreed.tolist())
    assert learned is not None and learned > 0.9  # measured on rows each fit did not see
    noise = rng.random(200) > 0.5
    guessed = roc_auc(out_of_fold(vectors, noise).tolist(), noise.tolist())
    assert guessed is not None and 0.3 < guessed < 0.7
    weights, bias = fit(vectors, agreed)
    assert int(np.argmax(np.abs(weights))) == 3 and abs(bias) < 1.0


def test_auc_counts_ties_half_and_needs_both_kinds() -> None:
    assert roc_auc([0.9, 0.1], [True, False]) == 1.0
    assert roc_auc([0.1, 0.9], [True, False]) == 0.0
    assert roc_auc([0.5, 0.5], [True, False]) == 0.5
    assert roc_auc([0.5, 0.7], [True, True]) is None


def test_a_classifier_file_round_trips_and_refuses_what_it_is_not(tmp_path: Path) -> None:
    made = RouteClassifier(
        embedder="e1", weights=[2.0, -1.0], bias=0.5, routes=30, agreed_share=0.6,
        trained_at="2026-12-06T00:00:00Z",
    )  # fmt: skip
    path = tmp_path / "router.json"
    made.save(path)
    loaded = RouteClassifier.load(path)
    assert loaded == made
    assert loaded.probability([1.0, 0.0]) == pytest.approx(1 / (1 + np.exp(-2.5)))
    with pytest.raises(ValueError, match="3 dimensions for a classifier of 2"):
        loaded.probability([1.0, 0.0, 0.0])
    (tmp_path / "bad.json").write_text('{"weights": []}')
    with pytest.raises(ValueError, match=r"bad\.json: not a route classifier"):
        RouteClassifier.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match=r"missing\.json: not a route classifier"):
        RouteClassifier.load(tmp_path / "missing.json")
    (tmp_path / "nan.json").write_text(made.model_dump_json().replace("2.0", "NaN"))
    with pytest.raises(ValueError, match="not a route classifier"):
        RouteClassifier.load(tmp_path / "nan.json")


def _recorded() -> list[TrainingRoute]:
    """Routes as recorded: questions naming an order the heavy model read as the router
    did; vague ones about a parcel it read otherwise. The router's reported confidence
    says nothing (the same number for both)."""
    named = [f"Where is order {n}?" for n in range(1001, 1021)]
    vague = [
        f"My {thing}, the one from {when}, what about it?"
        for thing in ("parcel", "package", "delivery", "box")
        for when in ("last week", "Monday", "before", "the other day", "March")
    ]
    return [
        *(TrainingRoute(q, 0.8, "reported", True) for q in named),
        *(TrainingRoute(q, 0.8, "reported", False) for q in vague),
    ]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    pytest.importorskip("sentence_transformers", reason="the semantic extra")
    from agentkeel.activities.cache.semantic.setup import shared_embedder

    return shared_embedder(None, "torch")


async def test_trained_from_records_it_measures_better_than_a_flat_report(
    embedder: Embedder,
) -> None:
    classifier, report = await train(_recorded(), embedder)
    assert classifier is not None and classifier.embedder == embedder.identity
    assert classifier.routes == 40 and report.agreed_share == 0.5
    assert report.classifier_auc is not None and report.classifier_auc > 0.9
    assert report.router_auc == {"reported": 0.5}
    assert "the classifier measures better than the router's reported" in report.verdict
    score = classifier_scorer(classifier, embedder)
    assert await score(SURE) > 0.7 > await score(UNSURE)
    few, why = await train(_recorded()[: FEWEST_ROUTES - 1], embedder)
    assert few is None and "of both kinds" in why.verdict


@pytest.fixture
async def hosted() -> AsyncIterator[str]:
    pytest.importorskip("openai", reason="the llm-cpu or gpu extra")
    from tests.support.strict_server import FakeStrictHostedServer, serving

    server = FakeStrictHostedServer(
        {"order 1001": 9, "parcel": 3},
        intent="order_status",
        plan_step={"get_order": {"order_id": 1001}},
    )
    async with serving(server) as url:
        yield url


async def test_the_cascade_routes_on_the_classifier_without_logprobs(
    embedder: Embedder, hosted: str
) -> None:
    from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
    from agentkeel.inference.llm.cascade import CascadePolicy
    from agentkeel.inference.llm.policy import LlmPolicy
    from agentkeel.schemas.model_calls import RouteInput
    from agentkeel.schemas.route import ConfidenceBasis, Tier
    from tests.support.strict_server import MODEL

    classifier, _ = await train(_recorded(), embedder)
    assert classifier is not None
    score = classifier_scorer(classifier, embedder)

    def tier(tier: Tier) -> LlmPolicy:
        engine = OpenAICompatEngine(base_url=hosted, model=MODEL, api="chat")
        return LlmPolicy(
            engine, tier=tier, threshold=0.7, route_confidence="classifier", classify=score
        )

    light, heavy = tier(Tier.LIGHT), tier(Tier.HEAVY)
    for policy in (light, heavy):
        await policy.engine.start()
    cascade = CascadePolicy(light, heavy)
    sure = await cascade.route(RouteInput(question=SURE))
    assert sure.confident and sure.route.tier == Tier.LIGHT
    assert sure.route.basis == ConfidenceBasis.CLASSIFIER
    assert "classified=" in sure.route.reason and sure.route.intent == "order_status"
    unsure = await cascade.route(RouteInput(question=UNSURE))
    assert not unsure.confident and unsure.route.tier == Tier.HEAVY
    assert unsure.route.basis == ConfidenceBasis.CLASSIFIER

    async def broken(question: str) -> float:
        raise RuntimeError("the embedder is gone")

    light.classify = broken  # a failing classifier leaves the route unmeasured: escalated
    degraded = await cascade.route(RouteInput(question=SURE))
    assert not degraded.confident and degraded.route.basis == ConfidenceBasis.UNMEASURED


def test_a_worker_refuses_to_start_with_a_missing_or_foreign_classifier(
    embedder: Embedder, tmp_path: Path
) -> None:
    from agentkeel.settings.model import Settings, StartupError
    from agentkeel.workers.policy_assembly import route_classifier

    assert route_classifier(Settings()) is None  # logprobs: no classifier asked for
    with pytest.raises(StartupError, match="needs AGENTKEEL_ROUTE_CLASSIFIER"):
        route_classifier(Settings(route_confidence="classifier"))
    foreign = tmp_path / "foreign.json"
    RouteClassifier(
        embedder="another-model", weights=[0.0] * 384, bias=0.0, routes=20, agreed_share=0.5,
        trained_at="2026-12-06T00:00:00Z",
    ).save(foreign)  # fmt: skip
    with pytest.raises(StartupError, match="trained on embedder 'another-model'"):
        route_classifier(Settings(route_confidence="classifier", route_classifier=foreign))
    with pytest.raises(StartupError, match="not a route classifier"):
        route_classifier(
            Settings(route_confidence="classifier", route_classifier=tmp_path / "none.json")
        )
    mine = tmp_path / "mine.json"
    RouteClassifier(
        embedder=embedder.identity, weights=[0.0] * 384, bias=1.0, routes=20,
        agreed_share=0.5, trained_at="2026-12-06T00:00:00Z",
    ).save(mine)  # fmt: skip
    assert route_classifier(Settings(route_confidence="classifier", route_classifier=mine))
