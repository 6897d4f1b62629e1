"""The caches, leases and streams on a real three-node Redis Cluster
(`tests.support.redis_cluster`).

A cluster is recognised from the one node `AGENTKEEL_REDIS_URL` names; every script and
multi-key command keeps to one slot (a tenant's, `schemas.path_cache.tenant_tag`), so a path is
stored, served and invalidated as on one server; a node that stops costs its tenants a
miss, never a run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.asyncio.cluster import RedisCluster

from agentkeel.schemas.path_cache import path_key, tenant_tag
from agentkeel.schemas.result import CacheStatus, StepStatus
from agentkeel.settings.connections import is_cluster_node, redis_client
from tests.support.agent_stack import StackFactory
from tests.support.plans import KB_QUESTION, step_output
from tests.support.redis_cluster import REDIS_SERVER, Cluster, redis_cluster

pytestmark = pytest.mark.skipif(
    not Path(REDIS_SERVER).exists(), reason="the machine's redis-server is not installed"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with redis_cluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started


async def test_a_cluster_is_recognised_from_any_node(cluster: Cluster, redis_url: str) -> None:
    for port in cluster.ports:
        client = redis_client(f"redis://127.0.0.1:{port}/0")
        try:
            assert isinstance(client, RedisCluster)
            await client.set(f"probe:{port}", "1")  # routed to whichever node owns it
        finally:
            await client.aclose()
    assert not is_cluster_node(redis_url), "the session's single server stays a plain client"


async def test_a_path_is_stored_served_and_invalidated_on_a_cluster(
    cluster: Cluster, make_stack: StackFactory
) -> None:
    stack = await make_stack(redis_url=cluster.url)
    question = "Can order 1001 be fulfilled from stock?"
    before = await stack.ask(question)
    assert before.cache == CacheStatus.MISS and before.warnings == []
    assert (await stack.ask(question)).cache == CacheStatus.EXACT
    # The reading tier's pointer and the exact key live in the tenant's slot too.
    assert (await stack.ask("can ORDER 1001 be fulfilled from stock")).cache != CacheStatus.MISS
    refund = await stack.ask("Please refund $1.00 for order 1001")
    assert step_output(refund, "create_refund")["created"] is True
    after = await stack.ask(question)
    assert after.cache == CacheStatus.MISS, "the refund's invalidation reached the cluster"
    refunded = int(step_output(after, "get_order")["refunded_cents"])  # type: ignore[call-overload]
    assert refunded == int(step_output(before, "get_order")["refunded_cents"]) + 100  # type: ignore[call-overload]
    assert after.warnings == []


async def test_a_stopped_node_costs_its_tenants_a_miss_not_a_run(
    tmp_path: Path, make_stack: StackFactory
) -> None:
    with redis_cluster(tmp_path / "own") as own:  # this test stops a node of its own
        stack = await make_stack(redis_url=own.url)
        warm = await stack.ask(KB_QUESTION)
        assert (await stack.ask(KB_QUESTION)).cache == CacheStatus.EXACT
        probe = redis_client(own.url)
        assert isinstance(probe, RedisCluster)
        key = path_key(stack.tenant, KB_QUESTION, "any")
        assert tenant_tag(stack.tenant) in key
        await probe.initialize()
        node = probe.get_node_from_key(key)
        assert node is not None
        await probe.aclose()
        own.stop(node.port)
        result = await asyncio.wait_for(stack.ask(KB_QUESTION), timeout=60)
        assert result.cache == CacheStatus.MISS
        assert result.answer == warm.answer
        assert all(s.status == StepStatus.SUCCEEDED for s in result.steps)
