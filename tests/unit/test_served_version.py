"""The version a client's fast path reads under (`client.served_version`), when
the Redis cannot say."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from agentkeel.client import served_version
from agentkeel.client.served_version import ServedVersion


async def test_a_redis_that_cannot_say_serves_nothing_and_is_not_asked_again_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    down = aioredis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    monkeypatch.setattr(served_version, "CHECK_EVERY_S", 60.0)
    reader = ServedVersion(down, "q")
    assert await reader.current("mine") is None
    calls = 0

    async def counted(*args: object) -> None:
        nonlocal calls
        calls += 1

    monkeypatch.setattr(down, "get", counted)
    assert await reader.current("mine") is None and calls == 0, "kept for CHECK_EVERY_S"
    await down.aclose()
