"""The tiers of the path cache: each finds a stored path for a question its own way.

`PathCache.lookup` asks its tiers in order and serves the first match; `store` lets
every tier remember the new path. A new tier (a per-intent template cache, a cross-tenant
FAQ tier, ...) is one class with `find` and `remember`, added to the assembly's list.
Tiers only find keys and read entries through the cache: an entry that has expired or
been invalidated there is a miss for every tier, never a stale answer.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Protocol

import structlog

from agentkeel.schemas.path_cache import PathEntry
from agentkeel.schemas.result import CacheStatus

log = structlog.get_logger(__name__)

SEMANTIC_CANDIDATES = 3
"""Neighbours tried before a semantic lookup gives up (expired ones are forgotten)."""


ReadEntry = Callable[[str], Awaitable[PathEntry | None]]
"""Reads the live entry at a path key (None: absent, expired or unreadable)."""


@dataclass(frozen=True)
class TierQuery:
    tenant: str
    question: str
    conversation_id: str | None
    key: str
    """The exact key of this question: where a new path is stored."""
    scope: str
    """Tenant and cache version: a tier's own index must be partitioned by both."""


@dataclass(frozen=True)
class TierMatch:
    entry: PathEntry
    status: CacheStatus
    """How a hit through this match is reported (`exact`, `semantic`, ...)."""
    similarity: float | None = None
    matched_question: str | None = None


class PathTier(Protocol):
    quick: bool
    """One key read at most: the client fast path and `semantic=False` use only these."""

    async def find(self, query: TierQuery, read: ReadEntry) -> TierMatch | None: ...

    async def remember(self, query: TierQuery) -> None:
        """The path at `query.key` was stored: index it, if this tier keeps an index."""
        ...


class ExactTier:
    """The normalized question itself is the key: one Redis read."""

    quick = True

    async def find(self, query: TierQuery, read: ReadEntry) -> TierMatch | None:
        entry = await read(query.key)
        return None if entry is None else TierMatch(entry, CacheStatus.EXACT)

    async def remember(self, query: TierQuery) -> None:
        """The stored entry is this tier's index."""


class SemanticMatch(Protocol):
    @property
    def path_key(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def matched_question(self) -> str: ...


class SemanticIndex(Protocol):
    """Nearest stored questions that pass the guard (`activities.cache.semantic.lookup`)."""

    async def lookup(self, tenant: str, question: str) -> SemanticMatch | None: ...

    async def remember(self, tenant: str, question: str, path_key: str) -> None: ...

    async def forget(self, path_keys: Collection[str]) -> int: ...


class SemanticTier:
    """A guarded paraphrase of a stored question finds its path, within a deadline.

    Not within a conversation: there the same words may refer to earlier turns.
    """

    quick = False

    def __init__(self, index: SemanticIndex, *, deadline_s: float = 0.5) -> None:
        self._index = index
        self._deadline_s = deadline_s
        self._remembering: dict[str, set[asyncio.Task[None]]] = {}
        """Scope -> its entries being stored behind the runs that made them."""

    async def find(self, query: TierQuery, read: ReadEntry) -> TierMatch | None:
        if query.conversation_id:
            return None
        try:
            # The semantic tier may never make a run slow: past its deadline it is a miss.
            async with asyncio.timeout(self._deadline_s):
                pending = self._remembering.get(query.scope)
                if pending:  # a run of this scope just ended here: its entry counts
                    await asyncio.wait(list(pending))
                for _ in range(SEMANTIC_CANDIDATES):
                    match = await self._index.lookup(query.scope, query.question)
                    if match is None:
                        return None
                    entry = await read(match.path_key)
                    if entry is not None:
                        return TierMatch(
                            entry, CacheStatus.SEMANTIC, match.score, match.matched_question
                        )
                    # Expired or invalidated: forget it, so a live neighbour can answer.
                    await self._index.forget([match.path_key])
        except TimeoutError:
            log.warning("semantic_lookup_deadline", deadline_s=self._deadline_s)
        return None

    async def remember(self, query: TierQuery) -> None:
        """Stored behind the run, which does not wait for it: the entry only speeds up
        later paraphrases, and its embedding and index write are off the run's last
        step. A lookup of the same scope on this worker waits for it (other workers
        see it at their next sync, as before); a failure is logged and lost."""
        if query.conversation_id:
            return
        work = self._index.remember(query.scope, query.question, query.key)
        task = asyncio.get_running_loop().create_task(work)
        pending = self._remembering.setdefault(query.scope, set())
        pending.add(task)
        task.add_done_callback(functools.partial(self._remembered, query.scope))

    def _remembered(self, scope: str, task: asyncio.Task[None]) -> None:
        pending = self._remembering.get(scope)
        if pending is not None:
            pending.discard(task)
            if not pending:
                del self._remembering[scope]
        if not task.cancelled() and task.exception() is not None:
            log.warning("semantic_remember_failed", scope=scope, error=repr(task.exception()))
