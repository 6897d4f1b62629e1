"""The router's confidence, measured each way on one labelled set: which one tells a right
route from a wrong one.

    python -m bench.route_confidence [--engine llamacpp|settings] [--limit N] [--data FILE]

Each labelled request (`bench/data/plans.jsonl`, the rows whose tools one intent of the
domain holds more narrowly than any other) is routed by the light model twice: reading its label's
logprobs (`logprobs`), and writing its route as JSON with its own confidence
(`reported`). A route is right when its intent is the row's: the labelled intent stands
in for the heavy model's reading (no second, larger model runs on these machines). For
each source: the router's accuracy, then the ROC AUC, for telling its right routes from
its wrong ones, of its own confidence and of the route classifier
(`client.classifier_training`: the request's embedding, fitted out of fold on the same
routes, as `agentkeel route-classifier` fits it on recorded runs). 0.5 is a coin. The
last line is one JSON object.

Engines: `llamacpp` (llama.cpp's server with the packaged Gemma 3 270M, started here) and
`settings` (the light tier `AGENTKEEL_LIGHT_*` configures: a deployment's own router).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np

from agentkeel.client.route_training import out_of_fold, roc_auc
from agentkeel.inference.engines.openai_compat import OpenAICompatEngine
from agentkeel.inference.engines.protocol import Engine
from agentkeel.inference.llm.context import ContextBuilder
from agentkeel.inference.llm.prompts import intent_tools, route_labels, system_prefix
from agentkeel.inference.llm.route_reading import RouteConfidence, read_route
from agentkeel.schemas.route import Tier
from bench.plan_scoring import Row, load_rows
from bench.plan_servers import MODEL_NAME, llama_server_url
from bench.plans import DATA

SOURCES: tuple[RouteConfidence, ...] = ("logprobs", "reported")


def labelled_intent(row: Row) -> str | None:
    """The narrowest intent whose tools hold every tool of the row; None when none does,
    or several do alike (a lone `get_order` could be any order question)."""
    holding = [tools for tools in intent_tools().values() if row.tools <= set(tools)]
    narrowest = [
        name
        for name, tools in intent_tools().items()
        if row.tools <= set(tools) and len(tools) == min(map(len, holding), default=0)
    ]
    return narrowest[0] if len(narrowest) == 1 else None


@asynccontextmanager
async def light_engine(name: str) -> AsyncIterator[Engine]:
    if name == "settings":
        from agentkeel.settings.model import Settings
        from agentkeel.settings.model_tiers import engine_config
        from agentkeel.workers.policy_assembly import build_engine

        settings = Settings.from_env()
        config = engine_config(settings, Tier.LIGHT)
        engine = build_engine(config, settings) if config is not None else None
        if engine is None:
            raise SystemExit("engine `settings`: no light model is configured (AGENTKEEL_LIGHT_*)")
        await engine.start()
        try:
            yield engine
        finally:
            await engine.close()
        return
    async with llama_server_url() as url:
        engine = OpenAICompatEngine(base_url=url, model=MODEL_NAME, api="chat", timeout_s=600)
        await engine.start()
        try:
            yield engine
        finally:
            await engine.close()


async def routed(engine: Engine, question: str, source: RouteConfidence) -> tuple[str, float]:
    """The router's intent and confidence for `question` (0 where none was measured)."""
    context = ContextBuilder(budget=1600)

    def prompt(cue: str) -> str:
        return context.build(system_prefix(), f"User: {question}\n{cue}")

    label, confidence, _ = await read_route(engine, Tier.LIGHT, prompt, route_labels(), source)
    return label, confidence or 0.0


def measured(
    right: list[bool], confidence: list[float], vectors: np.ndarray
) -> dict[str, float | None]:
    agreed = np.array(right, dtype=bool)
    both = bool(agreed.any() and not agreed.all())
    classified = out_of_fold(vectors, agreed) if both else np.zeros(len(right))
    return {
        "accuracy": float(agreed.mean()) if right else None,
        "own_confidence_auc": roc_auc(confidence, right),
        "classifier_auc": roc_auc(classified.tolist(), right) if both else None,
    }


async def run(args: argparse.Namespace) -> dict[str, dict[str, float | None]]:
    from agentkeel.activities.cache.semantic.setup import shared_embedder

    rows = [(r, labelled_intent(r)) for r in load_rows(args.data) if r.replan is None]
    labelled = [(r, intent) for r, intent in rows if intent is not None][: args.limit]
    print(f"{len(labelled)} labelled requests of {len(rows)} (one intent each)")
    embedder = shared_embedder(None, "torch")
    vectors = embedder.embed([r.question for r, _ in labelled])
    results: dict[str, dict[str, float | None]] = {}
    async with light_engine(args.engine) as engine:
        for source in SOURCES:
            began, right, confidence = time.monotonic(), [], []
            for row, intent in labelled:
                label, sure = await routed(engine, row.question, source)
                right.append(label == intent)
                confidence.append(sure)
            results[source] = measured(right, confidence, vectors)
            results[source]["seconds"] = round(time.monotonic() - began, 1)
    return results


def report(results: dict[str, dict[str, float | None]]) -> str:
    def shown(value: float | None) -> str:
        return f"{value:.3f}" if value is not None else "n/a"

    lines = ["| router source | accuracy | own confidence AUC | classifier AUC |"]
    lines.append("| --- | --- | --- | --- |")
    for source, row in results.items():
        lines.append(
            f"| {source} | {shown(row['accuracy'])} | {shown(row['own_confidence_auc'])} "
            f"| {shown(row['classifier_auc'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=["llamacpp", "settings"], default="llamacpp")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--data", type=Path, default=DATA)
    results = asyncio.run(run(parser.parse_args()))
    print(report(results))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
