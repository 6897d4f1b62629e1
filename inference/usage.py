"""Counting what model calls use: a book per model activity, and the price table.

Every model call of the LLM policy goes through `inference.llm.decoding`, which enters it
in the book the calling activity opened (`metering_usage`, a context variable, so the
planner a route starts beside itself is counted in the route's book too). Counts are the
server's own; where a server says nothing (a stream without `include_usage`, a server
that omits `usage`) the call is counted by `approx_tokens` and marked `estimated`.
Outside an activity's book nothing is counted (benchmarks, tests of the policy alone).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from agentkeel.schemas.route import Tier
from agentkeel.schemas.usage import ModelUsage, PriceTable, RunUsage

__all__ = ["UsageBook", "approx_tokens", "count_call", "metering_usage"]

_BOOK: ContextVar[UsageBook | None] = ContextVar("agentkeel_usage_book", default=None)


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 3.5 characters per token for English and JSON),
    rounded up (the same rule as the context budget's)."""
    return math.ceil(len(text) / 3.5)


@dataclass
class UsageBook:
    """The calls of one model activity, as they are made."""

    lines: list[ModelUsage] = field(default_factory=list)

    def usage(self, prices: PriceTable) -> RunUsage:
        return prices.priced(RunUsage.of(self.lines))


@contextmanager
def metering_usage() -> Iterator[UsageBook]:
    """Count every model call made inside the block (and in tasks it starts) in one book."""
    book = UsageBook()
    token = _BOOK.set(book)
    try:
        yield book
    finally:
        _BOOK.reset(token)


def count_call(
    tier: Tier,
    model: str,
    *,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    prompt_text: str,
    completion_text: str,
) -> tuple[int, int, bool]:
    """Enter one call in the current book (if any): the server's counts, or estimates of
    the texts where it gave none (0 counts as none: no real call reads or writes nothing).
    The counts entered, and whether they were estimated."""
    estimated = False
    if not prompt_tokens:
        prompt_tokens, estimated = approx_tokens(prompt_text), True
    if not completion_tokens:
        completion_tokens = approx_tokens(completion_text)
        estimated = estimated or bool(completion_text)
    book = _BOOK.get()
    if book is not None:
        book.lines.append(
            ModelUsage(
                tier=tier,
                model=model,
                calls=1,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                estimated=estimated,
            )
        )
    return prompt_tokens, completion_tokens, estimated
