"""The overflow lane's slots when Redis does not answer: the run goes on holding nothing
(a lane orders work; it never stalls a run on the store that only counts it), and a slot
that cannot be given back is left to expire."""

from __future__ import annotations

from agentkeel.activities.overflow_slots import OverflowSlots, overflow_keys
from agentkeel.schemas.lanes import OverflowSlotAsk
from agentkeel.settings.connections import redis_client
from agentkeel.settings.ports import free_port


async def test_a_redis_that_does_not_answer_lets_the_run_go_on() -> None:
    redis = redis_client(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    try:
        slots = OverflowSlots(redis, "q", cap=1)
        grant = await slots.take_overflow_slot(OverflowSlotAsk(workflow_id="w"))
        assert grant.go_on and not grant.held
        assert await slots.give_back_overflow_slot(OverflowSlotAsk(workflow_id="w")) == []
    finally:
        await redis.aclose()


def test_one_deployments_sets_share_one_hash_tag() -> None:
    held, waiting, seen = overflow_keys("my-queue")
    # One Redis Cluster slot for both keys of the script: the tag is the task queue.
    assert held.count("{my-queue}") == waiting.count("{my-queue}") == seen.count("{my-queue}") == 1
    assert len({held, waiting, seen}) == 3
