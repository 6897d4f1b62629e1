"""The version a client's fast path reads under (`client.served_version`), on Redis."""

from __future__ import annotations

import uuid

import pytest
import redis.asyncio as aioredis

from agentkeel.activities.cache.served_version import Publication
from agentkeel.client import served_version
from agentkeel.client.served_version import ServedVersion


@pytest.fixture(autouse=True)
def no_read_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(served_version, "CHECK_EVERY_S", 0.0)  # every read asks Redis


async def test_a_client_reads_under_what_the_workers_publish(redis: aioredis.Redis) -> None:
    queue = f"q-{uuid.uuid4().hex[:8]}"
    reader = ServedVersion(redis, queue)
    assert await reader.current("mine") == "mine", "no worker published: its own version"
    first = Publication(redis, queue, "v1")
    await first.publish()
    assert await reader.current("mine") == "v1"
    first.withdraw_soon()  # its catalog is changing
    await first.settle()
    assert await reader.current("mine") is None, "withdrawn: no fast path"
    await first.publish()
    assert await reader.current("mine") is None, "a withdrawn worker publishes no more"
    await Publication(redis, queue, "v2").publish()  # the restarted worker
    assert await reader.current("mine") == "v2"
    late = Publication(redis, queue, "v1")
    late.withdraw_soon()  # an old worker withdrawing late leaves the new version standing
    await late.settle()
    assert await reader.current("mine") == "v2"
    other = ServedVersion(redis, queue, namespace="staging")
    assert await other.current("mine") == "mine", "another namespace's workers are apart"
