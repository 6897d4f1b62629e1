"""The token stream of a run: how the respond step's text reaches the user as it is written.

Public contract (any Redis client may read it): one Redis Stream per run, at
`token_stream_key(workflow_id, run_id)`, with entries whose fields are those of
`TokenEvent`. Each respond attempt begins with a `reset` entry carrying its attempt
number: a reader drops the text it holds from earlier attempts, so a retried respond
activity never shows the user duplicated text. An attempt that timed out may still be
running and writing after its retry's `reset`: readers ignore entries of attempts older
than the newest they have seen, and only the newest attempt's `done` closes the stream
for them. `done` closes the stream; the run's
result holds the whole answer in any case, so a reader that misses the stream loses
nothing but the early view.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

TOKEN_STREAM_PREFIX = "agentkeel:tokens:"
TOKEN_STREAM_TTL_S = 3600
"""A stream outlives its run by this much, for late readers, then Redis drops it."""
TOKEN_STREAM_MAXLEN = 10_000
"""Approximate cap on entries per stream (an answer is far shorter)."""


CANCELLED_TEXT = "the run was cancelled"
"""The text of a `cancelled` entry."""


class TokenEventType(StrEnum):
    RESET = "reset"
    """An attempt starts: discard any text of earlier attempts."""
    TOKEN = "token"
    """New text, to append."""
    DONE = "done"
    """The attempt finished; `text` is empty."""
    CANCELLED = "cancelled"
    """The run was cancelled: no (further) answer will come; `text` says so."""


class TokenEvent(BaseModel):
    type: TokenEventType
    attempt: int
    text: str = ""


class CancellationNotice(BaseModel):
    """Input of the `announce_cancellation` local activity: which run's stream to close."""

    workflow_id: str
    run_id: str


def token_stream_key(workflow_id: str, run_id: str) -> str:
    """The Redis Stream a run's tokens are published to."""
    return f"{TOKEN_STREAM_PREFIX}{workflow_id}:{run_id}"
