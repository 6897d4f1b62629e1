"""The publishing side of a run's token stream (contract: `schemas/tokens.py`).

The respond activity writes its text here as the model produces it. Streaming is a
preview: the run's result carries the whole answer regardless, so a Redis that is slow
or down must never fail or delay the answer. The first error turns the stream off for
the rest of the attempt (one warning, no retries), and every later call is a no-op.
"""

from __future__ import annotations

from datetime import UTC, datetime

import redis.asyncio as aioredis
import structlog
from opentelemetry.instrumentation.utils import suppress_instrumentation

from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.schemas.tokens import (
    CANCELLED_TEXT,
    TOKEN_STREAM_MAXLEN,
    TOKEN_STREAM_TTL_S,
    TokenEvent,
    TokenEventType,
    token_stream_key,
)

log = structlog.get_logger(__name__)


class TokenStream:
    """One respond attempt's writer to its run's stream; `redis=None` streams nothing."""

    def __init__(self, redis: aioredis.Redis | None, key: str, attempt: int) -> None:
        self._redis = redis
        self._key = key
        self._attempt = attempt
        self._begun = False
        self.first_token_at: datetime | None = None
        """UTC wall time of the first non-empty text, set even when nothing is streamed:
        it is when the text existed, which is what time-to-first-token measures."""

    @classmethod
    def for_run(
        cls,
        redis: aioredis.Redis | None,
        workflow_id: str | None,
        run_id: str | None,
        attempt: int,
    ) -> TokenStream:
        """The stream of this workflow run; off outside one (a standalone activity has
        no run whose caller could follow it, hence `activity.Info`'s optional ids)."""
        if workflow_id is None or run_id is None:
            return cls(None, "", attempt)
        return cls(redis, token_stream_key(workflow_id, run_id), attempt)

    @property
    def enabled(self) -> bool:
        """False with no Redis, or after an error turned this attempt's stream off."""
        return self._redis is not None

    async def begin(self) -> None:
        """Tell readers this attempt starts, so they drop any text of earlier attempts."""
        if not self._begun:
            await self._send([self._event(TokenEventType.RESET)], expire=True)
            self._begun = True

    async def publish(self, text: str) -> None:
        if not text:
            return
        if self.first_token_at is None:
            self.first_token_at = datetime.now(UTC)
        events = [self._event(TokenEventType.TOKEN, text)]
        if not self._begun:
            # A caller that skipped begin() still gets the reset and the TTL, in the
            # same round trip: without the reset a retry's text would be appended.
            events.insert(0, self._event(TokenEventType.RESET))
            self._begun = True
        await self._send(events, expire=len(events) > 1)

    async def finish(self) -> None:
        """Close the stream; the TTL is renewed so late readers get the full hour."""
        await self._send([self._event(TokenEventType.DONE)], expire=True)

    async def cancelled(self) -> None:
        """Tell readers the run was cancelled: no (further) answer will come."""
        await self._send([self._event(TokenEventType.CANCELLED, CANCELLED_TEXT)], expire=True)

    def _event(self, kind: TokenEventType, text: str = "") -> TokenEvent:
        return TokenEvent(type=kind, attempt=self._attempt, text=text)

    async def _send(self, events: list[TokenEvent], *, expire: bool) -> None:
        """XADD `events` (and EXPIRE) in one round trip; on error, switch streaming off."""
        if self._redis is None:
            return
        pipe = self._redis.pipeline(transaction=False)
        for event in events:
            pipe.xadd(
                self._key,
                {"type": event.type.value, "attempt": event.attempt, "text": event.text},
                maxlen=TOKEN_STREAM_MAXLEN,
                approximate=True,
            )
        if expire:
            pipe.expire(self._key, TOKEN_STREAM_TTL_S)
        try:
            # Not one trace span per token: the respond activity's span stands for them.
            with suppress_instrumentation():
                await pipe.execute()
        except REDIS_ERRORS as exc:
            self._redis = None
            log.warning("token_stream_off", key=self._key, attempt=self._attempt, error=repr(exc))
