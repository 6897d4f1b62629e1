"""The reading tier of the path cache: a question read the same as a stored one finds its path.

Keyed by the canonical reading (`activities.cache.reading`): facts and concepts, not
wording. One Redis read finds the pointer to the stored path, one more reads the path, so
the tier costs about what the exact tier costs and needs no embedder. Like the semantic
tier it reads the path through the cache, so an expired or invalidated path is a miss,
and it is never asked within a conversation, where the same words may refer to earlier
turns. The stored question is read again before it is served: a pointer left by another
vocabulary or a digest collision cannot serve another question.
"""

from __future__ import annotations

from datetime import timedelta

from agentkeel.activities.cache.backend import CacheBackend
from agentkeel.activities.cache.reading import read
from agentkeel.activities.cache.tiers import ReadEntry, TierMatch, TierQuery
from agentkeel.schemas.path_cache import tenant_tag
from agentkeel.schemas.result import CacheStatus

POINTER_PREFIX = "agentkeel:reading:v2"
"""v2: pointers carry their tenant's slot tag, beside the entries they point to."""


class ReadingTier:
    """Paths by the reading of their question, within the query's scope.

    Args:
        backend: The cache's Redis backend (pointers live beside the paths).
        ttl: How long a pointer lives: the plan TTL, the longest a path can.
    """

    quick = False

    def __init__(self, backend: CacheBackend, *, ttl: timedelta) -> None:
        self._backend = backend
        self._ttl = ttl

    @staticmethod
    def pointer_key(tenant: str, scope: str, digest: str) -> str:
        return f"{POINTER_PREFIX}:{tenant_tag(tenant)}:{scope}:{digest}"

    async def find(self, query: TierQuery, read_entry: ReadEntry) -> TierMatch | None:
        if query.conversation_id:
            return None
        reading = read(query.question)
        if reading is None:
            return None
        pointer = self.pointer_key(query.tenant, query.scope, reading.digest())
        raw = await self._backend.get(pointer)
        if raw is None:
            return None
        path_key = raw.decode() if isinstance(raw, bytes) else str(raw)
        if path_key == query.key:
            return None  # the exact tier's own entry: it has already missed
        entry = await read_entry(path_key)
        if entry is None:
            await self._backend.delete(pointer)  # expired or invalidated: a miss from now on
            return None
        if read(entry.question) != reading:
            return None
        return TierMatch(entry, CacheStatus.CANONICAL, matched_question=entry.question)

    async def remember(self, query: TierQuery) -> None:
        if query.conversation_id:
            return
        reading = read(query.question)
        if reading is not None:
            await self._backend.set(
                self.pointer_key(query.tenant, query.scope, reading.digest()), query.key, self._ttl
            )
