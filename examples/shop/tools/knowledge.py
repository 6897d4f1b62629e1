"""The help-center articles, searched by full text: `search_kb`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel import ActorScoped, FreeText, ToolArgs, ToolContext, tool
from agentkeel.examples.shop import queries as q
from agentkeel.examples.shop.downstreams import KNOWLEDGE
from agentkeel.examples.shop.resources import shop


class SearchKbArgs(ToolArgs):
    query: FreeText = Field(min_length=1, max_length=500)
    limit: int = Field(default=3, ge=1, le=10)


class SearchKbInput(SearchKbArgs, ActorScoped):
    """What the activity receives: the arguments plus what the workflow adds (the same
    fields as the tool's own `input_model`; named here for stand-ins and tests)."""


class KbHit(BaseModel):
    article_id: int
    title: str
    snippet: str
    rank: float


class KbResult(BaseModel):
    query: str
    hits: list[KbHit]


def _kb(out: dict[str, Any]) -> str:
    if not out["hits"]:
        return "I found no help-center article about that."
    top = out["hits"][0]
    snippet = top["snippet"].strip()
    if snippet and snippet[-1] not in ".!?…":
        snippet += "…"  # snippets are cut mid-sentence; don't run into the next sentence
    return f"From our help center, “{top['title']}”: {snippet}"


@tool(downstream=KNOWLEDGE, cache_ttl=timedelta(hours=1), render=_kb)
async def search_kb(args: SearchKbArgs, ctx: ToolContext) -> KbResult:
    """Search the knowledge base of policy articles."""
    async with shop(ctx).pool.acquire() as conn:
        rows = await conn.fetch(q.SEARCH_KB_ALL_WORDS, args.query, args.limit)
        if not rows:
            rows = await conn.fetch(q.SEARCH_KB_ANY_WORD, args.query, args.limit)
    hits = [
        KbHit(
            article_id=row["article_id"],
            title=row["title"],
            snippet=row["snippet"],
            rank=row["rank"],
        )
        for row in rows
    ]
    return KbResult(query=args.query, hits=hits)
