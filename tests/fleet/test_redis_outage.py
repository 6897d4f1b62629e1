"""A Redis outage: the test's own `redis-server` is stopped under a stack, whose runs still
complete, uncached, without paying its timeouts on every retry."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agentkeel.schemas.result import CacheStatus, StepStatus
from tests.support.agent_stack import StackFactory
from tests.support.plans import KB_QUESTION
from tests.support.redis_server import EmbeddedRedis, embedded_redis


@pytest.fixture
def private_redis() -> Iterator[EmbeddedRedis]:
    """A Redis server of this test's own, so the test may stop it."""
    with embedded_redis() as server:
        yield server


async def test_redis_stopped_run_still_completes(
    make_stack: StackFactory, private_redis: EmbeddedRedis
) -> None:
    stack = await make_stack(redis_url=private_redis.url)
    warm = await stack.ask(KB_QUESTION)
    assert warm.warnings == []
    private_redis.process.terminate()
    private_redis.process.wait()
    result = await asyncio.wait_for(stack.ask(KB_QUESTION), timeout=30)
    assert result.cache == CacheStatus.MISS
    assert result.answer == warm.answer
    assert any("cache unavailable" in w for w in result.warnings)
    assert all(s.status == StepStatus.SUCCEEDED for s in result.steps)
    # The dead Redis must not cost the run its socket timeouts on every retry.
    assert result.timings_ms.cache < 2000
