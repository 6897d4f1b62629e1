"""The reading side of a run's token stream (contract: `schemas/tokens.py`).

`TokenReader` follows one stream from its first entry, so a reader that starts late
still sees the whole answer; `AnswerView` turns the events into the text to show,
dropping what a failed attempt wrote once its retry begins.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

import redis.asyncio as aioredis
import structlog

from agentkeel.schemas.tokens import TokenEvent, TokenEventType

DEFAULT_BLOCK_MS = 250
"""Kept under the socket timeout of `workers.resources.redis_client` (0.5 s): a longer
BLOCK would read as a dead connection there."""
DEFAULT_IDLE_TIMEOUT_S = 60.0
DRAIN_TIMEOUT_S = 1.0
STOP_GRACE_S = 0.05
"""How long a stopped follower is waited for. redis-py (seen with 7.4 and 8.2) can swallow
a cancellation that lands at some points of a blocking XREAD, and the follower then reads
on; `TokenReader.stop` makes it end after that read (at most `block_ms`) without handing
out anything more, so nobody waits on it."""

log = structlog.get_logger(__name__)

T = TypeVar("T")
OnEvent = Callable[[TokenEvent], Awaitable[None] | None]
"""Called with each event in order; may be a plain function or a coroutine function."""


def parse_event(fields: dict[Any, Any]) -> TokenEvent:
    """A stream entry's fields as a `TokenEvent` (bytes or str, as the client decodes)."""
    decoded = {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in fields.items()
    }
    return TokenEvent.model_validate(decoded)


class TokenReader:
    """Reads one stream in order; `last_id` is where the next read starts."""

    def __init__(
        self,
        redis: aioredis.Redis,
        key: str,
        *,
        block_ms: int = DEFAULT_BLOCK_MS,
        idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
    ) -> None:
        self._redis = redis
        self._key = key
        self._block_ms = below_socket_timeout(redis, block_ms)
        self._idle_timeout_s = idle_timeout_s
        self.last_id: bytes | str = "0"
        self._stopped = False
        self._attempt = 0
        """The latest attempt seen: only its `done` ends the stream (a stale attempt
        that outlived its timeout may still write after its retry began)."""

    def stop(self) -> None:
        """End `follow()` at its next step, even one whose cancellation was swallowed: it
        neither advances `last_id` nor yields again, so `drain()` may take over at once."""
        self._stopped = True

    async def follow(self) -> AsyncIterator[TokenEvent]:
        """Every event in order, until the latest attempt's `done`, idle timeout, cancel
        or `stop()`."""
        last_seen = time.monotonic()
        while not self._stopped:
            entries = await self._read(block_ms=self._block_ms)
            if entries:
                last_seen = time.monotonic()
            for entry_id, event in entries:
                if self._stopped:
                    return
                # Advanced per event, not per batch: a follower cancelled mid-batch
                # leaves `drain()` the events it had not yet handed out.
                self.last_id = entry_id
                self._attempt = max(self._attempt, event.attempt)
                yield event
                if event.type is TokenEventType.CANCELLED:
                    return  # the run is over, whatever attempt wrote last
                if event.type is TokenEventType.DONE and event.attempt >= self._attempt:
                    return
            idle = time.monotonic() - last_seen
            if self._idle_timeout_s is not None and idle >= self._idle_timeout_s:
                return

    async def drain(self) -> list[TokenEvent]:
        """What the stream holds after `last_id`, without waiting (one round trip)."""
        return [event for _, event in await self.drain_with_ids()]

    async def drain_with_ids(self) -> list[tuple[bytes | str, TokenEvent]]:
        """`drain`, each event with its stream entry id (after `stop()` too)."""
        entries = await self._read(block_ms=None)
        for entry_id, event in entries:
            self.last_id = entry_id
            self._attempt = max(self._attempt, event.attempt)
        return entries

    async def _read(self, *, block_ms: int | None) -> list[tuple[bytes | str, TokenEvent]]:
        """Entries after `last_id`, parsed; `last_id` is left for the caller to advance."""
        # redis-py types replies loosely; this one is [[stream, [(id, fields), ...]]] or None.
        reply: Any = await self._redis.xread({self._key: self.last_id}, block=block_ms)
        return [
            (entry_id, parse_event(fields))
            for _stream, entries in reply or []
            for entry_id, fields in entries
        ]


def follow_tokens(
    redis: aioredis.Redis,
    key: str,
    *,
    block_ms: int = DEFAULT_BLOCK_MS,
    idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
) -> AsyncIterator[TokenEvent]:
    """Follow `key` from its first entry (see `TokenReader.follow`); Redis errors propagate."""
    reader = TokenReader(redis, key, block_ms=block_ms, idle_timeout_s=idle_timeout_s)
    return reader.follow()


async def relay_until(reader: TokenReader, outcome: Awaitable[T], on_event: OnEvent) -> T:
    """Await `outcome` (the run's result) while handing `reader`'s events to `on_event`.

    Best-effort: a stream error (or a failing `on_event`) stops the relay, never the
    outcome. When the outcome arrives first, the follower is stopped and what the stream
    still holds is read once without blocking: the respond activity wrote its `done`
    before the run could finish, so nothing is lost and no grace period is waited out
    (a run answered without the respond step, from the cache, writes no stream at all).
    """
    follower = asyncio.create_task(_relay(reader.follow(), on_event))
    try:
        result = await outcome
    finally:
        # Still following means it has not seen `done`: the drain below reads the rest.
        still_following = not follower.done()
        await stop_follower(reader, follower)
    if still_following:
        # Bounded even on a client without a socket timeout: the result is already here.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_relay(_drained(reader), on_event), DRAIN_TIMEOUT_S)
    return result


async def stop_follower(reader: TokenReader, follower: asyncio.Task[None]) -> None:
    """Stop a task following `reader`: cancel it, and wait for it only `STOP_GRACE_S`
    (a swallowed cancellation must not hang the caller; `reader.stop()` ends it soon)."""
    reader.stop()
    follower.cancel()
    await asyncio.wait([follower], timeout=STOP_GRACE_S)


async def _relay(events: AsyncIterator[TokenEvent], on_event: OnEvent) -> None:
    try:
        async for event in events:
            returned = on_event(event)
            if inspect.isawaitable(returned):
                await returned
    except Exception as exc:  # streaming is a preview: whatever fails, the result still comes
        log.warning("token_stream_read_failed", error=repr(exc))


async def _drained(reader: TokenReader) -> AsyncIterator[TokenEvent]:
    for event in await reader.drain():
        yield event


def below_socket_timeout(redis: aioredis.Redis, block_ms: int) -> int:
    """`block_ms`, shortened to half the client's socket timeout if that is shorter."""
    timeout_s = redis.connection_pool.connection_kwargs.get("socket_timeout")
    if timeout_s is None:
        return block_ms
    return max(1, min(block_ms, int(timeout_s * 500)))


class ViewChange(Enum):
    """What applying one event did to an `AnswerView`, for a printer to mirror."""

    IGNORED = "ignored"
    """A stale attempt's event, or a repeat: nothing changed."""
    STARTED = "started"
    """A new attempt began and no text had been shown yet."""
    RESTARTED = "restarted"
    """A new attempt began and the text shown so far was discarded; `AnswerView.text`
    is now the new attempt's (the event's own text, if a token announced it)."""
    APPENDED = "appended"
    """`event.text` was appended."""
    DONE = "done"
    """The current attempt finished."""
    CANCELLED = "cancelled"
    """The run was cancelled: no (further) answer will come."""


@dataclass
class AnswerView:
    """The answer as shown so far: only the latest attempt's text."""

    text: str = ""
    attempt: int = 0
    done: bool = False
    cancelled: bool = False

    def apply(self, event: TokenEvent) -> ViewChange:
        if event.type is TokenEventType.CANCELLED:
            # The run's own end, not an attempt's: it applies whatever attempt is shown.
            self.done = self.cancelled = True
            return ViewChange.CANCELLED
        if event.attempt < self.attempt:
            return ViewChange.IGNORED
        if event.attempt > self.attempt:
            # A newer attempt, announced by its reset (or, if that entry was lost, by
            # its first token): what earlier attempts wrote is no longer the answer.
            had_text = bool(self.text)
            self.text, self.attempt, self.done = "", event.attempt, False
            change = ViewChange.RESTARTED if had_text else ViewChange.STARTED
            if event.type is TokenEventType.RESET:
                return change
            appended = self.apply(event)
            return change if change is ViewChange.RESTARTED else appended
        if event.type is TokenEventType.TOKEN and not self.done:
            self.text += event.text
            return ViewChange.APPENDED
        if event.type is TokenEventType.DONE and not self.done:
            self.done = True
            return ViewChange.DONE
        return ViewChange.IGNORED


async def read_answer(
    redis: aioredis.Redis,
    key: str,
    *,
    idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
) -> AnswerView:
    """The answer as the stream at `key` shows it, once its latest attempt is done (or idle)."""
    view = AnswerView()
    async for event in follow_tokens(redis, key, idle_timeout_s=idle_timeout_s):
        view.apply(event)
    return view
