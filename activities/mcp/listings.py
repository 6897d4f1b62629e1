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


def listing_key(server: McpServer) -> str:
    """One key per server name and what it is reached by: another server under the same
    name (another command or URL) is another list."""
    where = server.url or "\0".join([server.command or "", *server.args])
    reached = hashlib.blake2b(where.encode(), digest_size=8).hexdigest()
    return f"{LISTING_PREFIX}{server.name}:{reached}"


class ServerListings:
    """The last good tool list of each server, shared by the workers through Redis."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis

    async def remember(self, server: McpServer, tools: list[types.Tool]) -> None:
        listing = json.dumps([t.model_dump(mode="json", by_alias=True) for t in tools])
        try:
            await self._redis.set(listing_key(server), listing)
        except REDIS_ERRORS as exc:  # others then fall back to leaving the tools out
            log.warning("mcp_listing_not_kept", server=server.name, error=str(exc))

    async def recall(self, server: McpServer) -> list[types.Tool] | None:
        """The list last seen by any worker; None where none was kept or it is unreadable."""
        try:
            raw = await self._redis.get(listing_key(server))
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
