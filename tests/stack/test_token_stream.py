"""The token stream against a real Redis: publisher, follower, answer view."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as aioredis

import agentkeel.activities.token_stream
from agentkeel.activities.token_stream import TokenStream
from agentkeel.client.token_follow import (
    AnswerView,
    TokenReader,
    ViewChange,
    follow_tokens,
    relay_until,
)
from agentkeel.schemas.tokens import (
    TOKEN_STREAM_TTL_S,
    TokenEvent,
    TokenEventType,
    token_stream_key,
)
from agentkeel.settings.connections import redis_client

RESET, TOKEN, DONE = TokenEventType.RESET, TokenEventType.TOKEN, TokenEventType.DONE
BOUND_S = 5.0
"""No test here should take nearly this long: a follower that does not stop fails fast."""


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    # The client the workers build: its 0.5 s socket timeout is what XREAD BLOCK must fit.
    client = redis_client(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def new_key(redis: aioredis.Redis) -> AsyncIterator[Callable[..., str]]:
    keys: list[str] = []

    def make(workflow_id: str | None = None, run_id: str | None = None) -> str:
        workflow_id = workflow_id or f"test-{uuid.uuid4().hex[:12]}"
        keys.append(token_stream_key(workflow_id, run_id or uuid.uuid4().hex))
        return keys[-1]

    yield make
    if keys:
        await redis.delete(*keys)


async def collect(
    redis: aioredis.Redis, key: str, *, block_ms: int = 250, idle_timeout_s: float = 3.0
) -> list[TokenEvent]:
    events = follow_tokens(redis, key, block_ms=block_ms, idle_timeout_s=idle_timeout_s)

    async def run() -> list[TokenEvent]:
        return [event async for event in events]

    return await asyncio.wait_for(run(), BOUND_S)


def text_of(events: list[TokenEvent]) -> str:
    view = AnswerView()
    for event in events:
        view.apply(event)
    assert view.done, "the view saw the current attempt finish"
    return view.text


async def test_a_follower_sees_the_tokens_in_order_as_they_are_published(
    redis: aioredis.Redis, new_key: Callable[..., str]
) -> None:
    key = new_key()
    follower = asyncio.create_task(collect(redis, key))
    await asyncio.sleep(0.1)  # the follower is blocked on an empty stream
    stream = TokenStream(redis, key, attempt=1)
    await stream.begin()
    for piece in ["Your ", "refund ", "", "was issued."]:
        await stream.publish(piece)
        await asyncio.sleep(0.01)
    await stream.finish()

    events = await follower
    assert [(e.type, e.attempt, e.text) for e in events] == [
        (RESET, 1, ""),
        (TOKEN, 1, "Your "),
        (TOKEN, 1, "refund "),
        (TOKEN, 1, "was issued."),  # the empty piece was not published
        (DONE, 1, ""),
    ]
    assert text_of(events) == "Your refund was issued."


async def test_a_late_reader_still_sees_everything(
    redis: aioredis.Redis, new_key: Callable[..., str]
) -> None:
    workflow_id, run_id = f"test-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    key = new_key(workflow_id, run_id)
    stream = TokenStream.for_run(redis, workflow_id, run_id, 3)
    await stream.publish("All ")  # without begin(): the reset is published first anyway
    await stream.publish("done.")
    await stream.finish()

    events = await collect(redis, key)
    assert [e.type for e in events] == [RESET, TOKEN, TOKEN, DONE]
    assert {e.attempt for e in events} == {3}
    assert text_of(events) == "All done."


async def test_a_retry_replaces_the_failed_attempts_text_even_if_that_attempt_lingers(
    redis: aioredis.Redis, new_key: Callable[..., str]
) -> None:
    key = new_key()
    first, second = TokenStream(redis, key, 1), TokenStream(redis, key, 2)
    await first.begin()
    await first.publish("The order was ")
    await second.begin()
    # Attempt 1 timed out but is still running: what it writes now must not show,
    # and its `done` must not end the follow before attempt 2's text.
    await first.publish("lost")
    await first.finish()
    await second.publish("shipped today.")
    await second.finish()

    events = await collect(redis, key)
    assert events[-1] == TokenEvent(type=DONE, attempt=2)
    view = AnswerView()
    changes = [view.apply(event) for event in events]
    assert view.text == "shipped today."
    assert changes == [
        ViewChange.STARTED,
        ViewChange.APPENDED,
        ViewChange.RESTARTED,
        ViewChange.IGNORED,
        ViewChange.IGNORED,
        ViewChange.APPENDED,
        ViewChange.DONE,
    ]


async def test_the_stream_expires_and_is_trimmed(
    redis: aioredis.Redis, new_key: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    monkeypatch.setattr(agentkeel.activities.token_stream, "TOKEN_STREAM_MAXLEN", 10)
    stream = TokenStream(redis, key, 1)
    await stream.begin()
    assert TOKEN_STREAM_TTL_S - 5 < await redis.ttl(key) <= TOKEN_STREAM_TTL_S
    for i in range(500):
        await stream.publish(f"t{i} ")
    # Approximate trimming drops whole macro nodes (about 100 entries) at a time.
    assert await redis.xlen(key) < 250


async def test_following_stops_when_nothing_arrives(
    redis: aioredis.Redis, new_key: Callable[..., str]
) -> None:
    key = new_key()
    await TokenStream(redis, key, 1).publish("and then the worker died")
    started = asyncio.get_running_loop().time()
    events = await collect(redis, key, block_ms=100, idle_timeout_s=0.4)
    took = asyncio.get_running_loop().time() - started
    assert [e.type for e in events] == [RESET, TOKEN]
    assert 0.4 <= took < 2.0


async def test_a_result_before_the_follower_catches_up_still_delivers_every_event(
    redis: aioredis.Redis, new_key: Callable[..., str]
) -> None:
    key = new_key()
    stream = TokenStream(redis, key, 1)
    await stream.publish("fast ")
    await stream.publish("answer")
    await stream.finish()
    seen: list[TokenEvent] = []

    async def on_event(event: TokenEvent) -> None:
        seen.append(event)

    async def result() -> str:
        return "the result"  # done before the follower's first read

    outcome = await asyncio.wait_for(relay_until(TokenReader(redis, key), result(), on_event), 1)
    assert outcome == "the result"
    assert [e.type for e in seen] == [RESET, TOKEN, TOKEN, DONE]


async def test_a_result_while_the_follower_blocks_ends_the_relay_at_once(
    redis: aioredis.Redis, new_key: Callable[..., str]
) -> None:
    """redis-py can swallow a cancellation that lands at some points of a blocking XREAD
    (the follower then reads on); the relay must end anyway, with every event once, and
    the follower must end by itself soon after. The landing point is a race, so the
    result arrives after a varying number of loop turns, many times."""
    key = new_key()
    stream = TokenStream(redis, key, 1)
    await stream.publish("only ")
    await stream.publish("text")  # no `done`: the follower blocks on an empty tail
    readers: list[TokenReader] = []
    for turns in range(40):
        seen: list[TokenEvent] = []

        async def result(turns: int = turns) -> str:
            for _ in range(turns % 13):
                await asyncio.sleep(0)
            return "the result"

        readers.append(TokenReader(redis, key))
        outcome = await asyncio.wait_for(relay_until(readers[-1], result(), seen.append), 1)
        assert outcome == "the result"
        assert [e.text for e in seen] == ["", "only ", "text"], turns
    await asyncio.sleep(0.6)  # one XREAD BLOCK and its reply: every follower has ended
    followers = [t for t in asyncio.all_tasks() if "coro=<_relay()" in repr(t)]
    assert followers == []
