"""Usage accounting, the price table and a run's budget decisions, without a server."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator

import pytest
from pydantic import ValidationError

from agentkeel.inference.engines.protocol import GenerateRequest, TokenDelta, Usage
from agentkeel.inference.llm.decoding import generate, stream
from agentkeel.inference.usage import approx_tokens, count_call, metering_usage
from agentkeel.schemas.request import RunOptions
from agentkeel.schemas.route import Tier
from agentkeel.schemas.usage import ModelUsage, PriceTable, RunBudget, RunUsage, parse_prices
from agentkeel.settings.model import Settings, SettingsError
from agentkeel.workflows.budget import BudgetDecision, decide
from tests.support.fakes import FakeEngine


def line(tier: Tier, model: str, prompt: int, completion: int, **more: object) -> ModelUsage:
    return ModelUsage(
        tier=tier, model=model, calls=1, prompt_tokens=prompt, completion_tokens=completion, **more
    )


def test_usage_sums_by_tier_and_model_in_the_order_first_seen() -> None:
    usage = RunUsage.of(
        [
            line(Tier.LIGHT, "small", 100, 5),
            line(Tier.HEAVY, "big", 300, 60, estimated=True),
            line(Tier.LIGHT, "small", 120, 7),
        ]
    )
    assert [(m.tier, m.model, m.calls) for m in usage.by_model] == [
        (Tier.LIGHT, "small", 2),
        (Tier.HEAVY, "big", 1),
    ]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (520, 72, 592)
    assert usage.calls == 3
    assert [m.estimated for m in usage.by_model] == [False, True]
    more = usage.plus(RunUsage.of([line(Tier.HEAVY, "big", 10, 1)]))
    assert (more.total_tokens, more.by_model[1].calls) == (603, 2)
    assert usage.plus(None) is usage and usage.total_tokens == 592  # added to nothing


def test_the_price_table_prices_each_model_and_says_which_it_could_not() -> None:
    table = parse_prices(" big=3:15 , small=0.1:0.4 ")
    usage = table.priced(
        RunUsage.of([line(Tier.HEAVY, "big", 1_000_000, 100_000), line(Tier.LIGHT, "odd", 10, 1)])
    )
    assert usage.by_model[0].cost_usd == pytest.approx(3 + 1.5)
    assert (usage.by_model[1].cost_usd, usage.by_model[1].priced) == (0.0, False)
    assert usage.cost_usd == pytest.approx(4.5)
    anything = parse_prices("*=1:1").priced(RunUsage.of([line(Tier.LIGHT, "odd", 500_000, 0)]))
    assert (anything.cost_usd, anything.by_model[0].priced) == (0.5, True)
    assert PriceTable().priced(usage).cost_usd == 0.0


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("big=3", "not model=prompt:completion"),
        ("=1:2", "not model=prompt:completion"),
        ("big=a:2", "must be numbers"),
        ("big=-1:2", "not negative"),
        ("big=nan:2", "not negative"),
        ("big=inf:2", "not negative"),
        ("big=1:2,big=2:3", "priced twice"),
    ],
)
def test_a_bad_price_table_is_refused_naming_the_entry(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_prices(text)
    with pytest.raises(SettingsError, match="AGENTKEEL_MODEL_PRICES"):
        Settings.from_env({"AGENTKEEL_MODEL_PRICES": text})


def test_settings_give_a_run_budget_only_when_one_is_set() -> None:
    assert Settings().run_budget() is None
    budget = Settings(run_budget_tokens=5000, run_budget_degrade_at=0.5).run_budget()
    assert budget == RunBudget(tokens=5000, degrade_at=0.5)
    assert Settings(run_budget_usd=0.25).run_budget() == RunBudget(cost_usd=0.25)
    assert Settings(budget_window="15m").budget_window_s == 900


def test_a_request_budget_is_checked_where_it_is_given() -> None:
    assert RunOptions.model_validate({"budget": {"tokens": 10}}).budget == RunBudget(tokens=10)
    for bad in ({"tokens": 0}, {"cost_usd": -1}, {"tokens": "10"}, {"degrade_at": 2}, {"x": 1}):
        with pytest.raises(ValidationError):
            RunOptions.model_validate({"budget": bad})


def test_a_budget_goes_on_then_degrades_then_stops() -> None:
    budget = RunBudget(tokens=1000, cost_usd=0.01, degrade_at=0.8)

    def spent(tokens: int, cost: float) -> RunUsage:
        priced = line(Tier.LIGHT, "m", tokens, 0, cost_usd=cost)
        return RunUsage.of([priced])

    assert decide(None, spent(10**9, 10.0)) is BudgetDecision.GO
    assert decide(budget, RunUsage()) is BudgetDecision.GO
    assert decide(budget, spent(799, 0.0)) is BudgetDecision.GO
    assert decide(budget, spent(800, 0.0)) is BudgetDecision.LIGHT
    assert decide(budget, spent(10, 0.008)) is BudgetDecision.LIGHT  # the cost counts too
    assert decide(budget, spent(1000, 0.0)) is BudgetDecision.STOP
    assert decide(budget, spent(0, 0.0101)) is BudgetDecision.STOP
    assert decide(RunBudget(tokens=100, degrade_at=1.0), spent(99, 0)) is BudgetDecision.GO


def test_a_call_is_counted_by_the_server_else_estimated_and_only_inside_a_book() -> None:
    assert count_call(
        Tier.LIGHT, "m", prompt_tokens=5, completion_tokens=2, prompt_text="", completion_text=""
    ) == (5, 2, False)  # no book: counted for the span, entered nowhere
    with metering_usage() as book:
        count_call(
            Tier.LIGHT,
            "m",
            prompt_tokens=50,
            completion_tokens=3,
            prompt_text="x",
            completion_text="y",
        )
        count_call(
            Tier.HEAVY,
            "M",
            prompt_tokens=0,
            completion_tokens=None,
            prompt_text="seven chars" * 7,
            completion_text="abcdefg",
        )
    assert [(m.prompt_tokens, m.completion_tokens, m.estimated) for m in book.lines] == [
        (50, 3, False),
        (approx_tokens("seven chars" * 7), 2, True),
    ]
    assert approx_tokens("abcdefg") == math.ceil(7 / 3.5)


class StreamsWithUsage(FakeEngine):
    """A fake model that closes its stream with the whole completion's counts, as an
    OpenAI-compatible server asked for `include_usage` does."""

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        async for delta in super().stream(request):
            yield delta
        yield TokenDelta(text="", usage=Usage(prompt_tokens=321, completion_tokens=9))


async def test_model_calls_enter_the_activitys_book_even_from_tasks_it_starts() -> None:
    plain = FakeEngine("fake-light", answer="On its way.")
    counted = StreamsWithUsage("fake-heavy", answer="It ships today.")
    request = GenerateRequest(system="head ", prompt="the question")
    with metering_usage() as book:
        await asyncio.create_task(generate(plain, Tier.LIGHT, request))
        pieces, _ = await stream(counted, Tier.HEAVY, request, None)
        await stream(plain, Tier.LIGHT, request, None)
    assert "".join(pieces) == "It ships today."
    usage = RunUsage.of(book.lines)
    heavy = next(m for m in usage.by_model if m.tier is Tier.HEAVY)
    assert (heavy.prompt_tokens, heavy.completion_tokens, heavy.estimated) == (321, 9, False)
    light = next(m for m in usage.by_model if m.tier is Tier.LIGHT)
    # The fake reports no counts: estimated from the texts, and said to be.
    assert light.calls == 2 and light.estimated
    assert light.prompt_tokens == 2 * approx_tokens("head the question")


class _Endless(FakeEngine):
    """Streams a word every few milliseconds until it is cancelled."""

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        while True:
            await asyncio.sleep(0.005)
            yield TokenDelta(text="word ")


async def test_a_call_cancelled_midway_still_counts_its_prompt_and_what_it_decoded() -> None:
    """A plan started beside a router that turned out sure is cancelled: its tokens were
    spent all the same, and a budget must see them."""
    request = GenerateRequest(system="head ", prompt="the question")
    streamed = stream(_Endless("heavy"), Tier.HEAVY, request, None)
    whole = generate(FakeEngine("heavy", answer="late", delay_s=30), Tier.HEAVY, request)
    for call, decoded_some in ((streamed, True), (whole, False)):
        with metering_usage() as book:
            task = asyncio.ensure_future(call)
            await asyncio.sleep(0.1)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        [spent] = book.lines
        assert spent.tier is Tier.HEAVY and spent.estimated
        assert spent.prompt_tokens == approx_tokens("head the question")
        # Streamed: the words it had written; whole: nothing came back to count.
        assert (spent.completion_tokens > 1) is decoded_some, spent


def test_the_deployments_run_budget_is_a_ceiling_a_request_cannot_lift() -> None:
    from agentkeel.client.budgets import held_under
    from agentkeel.schemas.request import AgentRequest, RunOptions
    from agentkeel.schemas.usage import RunBudget

    ceiling = RunBudget(tokens=20_000, degrade_at=0.8)
    asked = RunBudget(tokens=10**9, cost_usd=0.5, degrade_at=1.0)
    held = held_under(AgentRequest(question="q", options=RunOptions(budget=asked)), ceiling)
    assert held.options.budget == RunBudget(tokens=20_000, cost_usd=0.5, degrade_at=0.8)
    less = RunBudget(tokens=500, degrade_at=0.5)
    held = held_under(AgentRequest(question="q", options=RunOptions(budget=less)), ceiling)
    assert held.options.budget == less, "a request may ask for less"
    assert held_under(AgentRequest(question="q"), ceiling).options.budget == ceiling
    assert held_under(AgentRequest(question="q"), None).options.budget is None
