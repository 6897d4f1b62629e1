"""Each MCP server's last good tool list, kept where every worker reads it (Redis).

The catalog is fixed for a process's life and workflow code reads it while it replays, so
every worker must hold the same one: a worker that started while a server was down and
left its tools out would judge a run planned with them differently from the worker that
planned it (a nondeterminism error on replay, not a refused tool). So each worker that
lists a server records the list, and one that cannot reach the server at start builds its
catalog from the list the others last saw: its tools stay in the catalog, and their calls
fail as the server's outage (`McpUnavailable`, retried by Temporal, perhaps on a worker
that reaches the server) until it answers. Only where no list was ever recorded (the
server has never answered any worker) are its tools left out (`McpToolSource.withdrawn`).

Redis is inside the deployment's trust boundary here as for the cached answers: whoever
can write to it can write a list (and the tools' hints). A list is served only while its
server is down (every call then fails as the outage), and a server that answers with
another list restarts the worker on what it lists.
"""

from __future__ import annotations

import hashlib
import json

import mcp.types as types
import redis.asyncio as aioredis
import structlog
from pydantic import ValidationError

from agentkeel.activities.redis_errors import REDIS_ERRORS
from agentkeel.sdk.mcp import McpServer

log = structlog.get_logger(__name__)

LISTING_PREFIX = "agentkeel:mcp:listing:"


CHANGES_PREFIX = "agentkeel:mcp:changes:"
FLAP_WINDOW_S = 600
"""The window a server's list changes are counted in (`ServerListings.count_change`)."""

LISTING_TTL_S = 30 * 24 * 3600
"""A list no worker has seen for a month is not served: kept again at every listing."""


def listing_key(server: McpServer, scope: str = "") -> str:
    """One key per deployment (`scope`: its namespace and task queue, so a staging and a
    production sharing a Redis never share a list), server name and what the server is
    reached by (another command, URL or environment under the same name is another list)."""
    where = "\0".join(
        [scope, server.url or "", server.command or "", *server.args, *sorted(server.env)]
    )
    reached = hashlib.blake2b(where.encode(), digest_size=8).hexdigest()
    return f"{LISTING_PREFIX}{server.name}:{reached}"


class ServerListings:
    """The last good tool list of each server, shared by the workers through Redis."""

    def __init__(self, redis: aioredis.Redis, scope: str = "") -> None:
        """`scope`: the deployment's namespace and task queue (`listing_key`)."""
        self._redis = redis
        self._scope = scope

    def key(self, server: McpServer) -> str:
        return listing_key(server, self._scope)

    async def remember(self, server: McpServer, tools: list[types.Tool]) -> None:
        listing = json.dumps([t.model_dump(mode="json", by_alias=True) for t in tools])
        try:
            await self._redis.set(self.key(server), listing, ex=LISTING_TTL_S)
        except REDIS_ERRORS as exc:  # others then fall back to leaving the tools out
            log.warning("mcp_listing_not_kept", server=server.name, error=str(exc))

    async def count_change(self, server: McpServer, listing: str) -> int:
        """Count a change of `server`'s list to `listing` (its fingerprint) once for the
        deployment, however many processes see it; how many changes in the window
        (`FLAP_WINDOW_S`, from the first). 1 when Redis does not say."""
        name = self.key(server).removeprefix(LISTING_PREFIX)
        digest = hashlib.blake2b(listing.encode(), digest_size=8).hexdigest()
        seen = f"{CHANGES_PREFIX}{name}:seen:{digest}"
        count = f"{CHANGES_PREFIX}{name}"
        try:
            if await self._redis.set(seen, 1, ex=FLAP_WINDOW_S, nx=True):
                async with self._redis.pipeline(transaction=True) as pipe:
                    # The window opens with the first change (SET NX EX: any Redis version).
                    pipe.set(count, 0, ex=FLAP_WINDOW_S, nx=True)
                    pipe.incr(count)
                    _, counted = await pipe.execute()
                return int(counted)
            return int(await self._redis.get(count) or 1)
        except REDIS_ERRORS as exc:
            log.warning("mcp_change_not_counted", server=server.name, error=str(exc))
            return 1

    async def recall(self, server: McpServer) -> list[types.Tool] | None:
        """The list last seen by any worker; None where none was kept or it is unreadable."""
        try:
            raw = await self._redis.get(self.key(server))
        except REDIS_ERRORS as exc:
            log.warning("mcp_listing_unreadable", server=server.name, error=str(exc))
            return None
        if raw is None:
            return None
        try:
            return [types.Tool.model_validate(item) for item in json.loads(raw)]
        except (ValueError, TypeError, ValidationError) as exc:
            log.warning("mcp_listing_unreadable", server=server.name, error=str(exc))
            return None
