"""Plan-ahead's forecast is the fleet's: routes recorded by one worker reach another, and a
restarted worker plans ahead from its first request; an unreachable Redis costs nothing."""

from __future__ import annotations

import uuid

import redis.asyncio as aioredis

from agentkeel.activities.forecast_store import ForecastStore
from agentkeel.activities.plan_ahead import UnsureForecast


def _scope() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


async def test_a_new_worker_reads_the_fleets_history_before_its_first_route(
    redis: aioredis.Redis,
) -> None:
    scope = _scope()
    seen = UnsureForecast(store=ForecastStore(redis))
    for _ in range(4):
        await seen.ready(scope, "acme")
        seen.observe("acme", unsure=True, scope=scope)
    assert seen.expects_unsure("acme", scope)
    assert seen.store is not None
    await seen.store.flush()

    # `unseen="after"`: with nothing read, a route would come first.
    restarted = UnsureForecast(store=ForecastStore(redis), unseen="after")
    assert not restarted.expects_unsure("acme", scope)  # nothing read yet
    await restarted.ready(scope, "acme")
    assert restarted.expects_unsure("acme", scope)
    await restarted.ready(scope, "other")  # too new: its deployment's routes decide
    assert restarted.expects_unsure("other", scope)


async def test_a_new_tenant_is_forecast_from_its_deployments_routes_on_any_worker(
    redis: aioredis.Redis,
) -> None:
    scope, store = _scope(), ForecastStore(redis)
    first = UnsureForecast(store=store)
    for tenant in ("a", "b", "c", "d"):  # one route each: none has a history of its own
        first.observe(tenant, unsure=True, scope=scope)
    await store.flush()
    assert await store.histories(scope, "new") == ([], [True] * 4)

    other_worker = UnsureForecast(store=ForecastStore(redis), unseen="after")
    await other_worker.ready(scope, "new")
    assert other_worker.expects_unsure("new", scope)
    quiet, nobodys = UnsureForecast(store=ForecastStore(redis), unseen="after"), _scope()
    await quiet.ready(nobodys, "new")  # a deployment nobody has routed in
    assert not quiet.expects_unsure("new", nobodys)
    await quiet.ready(scope, "new")  # this one's routes are read by any worker
    assert quiet.expects_unsure("new", scope)


async def test_the_shared_history_keeps_the_window_and_follows_confident_routes(
    redis: aioredis.Redis,
) -> None:
    scope = _scope()
    store = ForecastStore(redis, window=5)
    first = UnsureForecast(store=store, window=5)
    for unsure in (True, True, True, False, False, False, False):
        first.observe("acme", unsure=unsure, scope=scope)
    await store.flush()
    assert await store.histories(scope, "acme") == ([True, False, False, False, False],) * 2
    second = UnsureForecast(store=store, window=5)
    await second.ready(scope, "acme")
    assert not second.expects_unsure("acme", scope)


async def test_an_unreachable_store_leaves_the_workers_own_memory() -> None:
    down = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.05)
    forecast = UnsureForecast(store=ForecastStore(down))
    await forecast.ready("scope", "acme")  # answers at once, with nothing read
    for _ in range(3):
        forecast.observe("acme", unsure=True, scope="scope")
    assert forecast.expects_unsure("acme", "scope")
    assert await ForecastStore(down).histories("scope", "acme") is None
    await down.aclose()


async def test_modes_other_than_auto_never_touch_the_store(redis: aioredis.Redis) -> None:
    scope = _scope()
    store = ForecastStore(redis)
    always = UnsureForecast("always", store=store)
    await always.ready(scope, "acme")
    always.observe("acme", unsure=False, scope=scope)
    await store.flush()
    assert always.expects_unsure("acme", scope)
    assert await store.histories(scope, "acme") == ([], [])
