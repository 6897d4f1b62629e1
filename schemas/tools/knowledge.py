"""The help-center articles, searched by full text: `search_kb`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.tools.downstreams import KNOWLEDGE
from agentkeel.schemas.tools.spec import ActorScoped, ToolArgs, ToolSpec


class SearchKbArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=500)
    limit: int = Field(default=3, ge=1, le=10)


class SearchKbInput(SearchKbArgs, ActorScoped):
    """What the activity receives."""


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


SEARCH_KB = ToolSpec(
    name="search_kb",
    downstream=KNOWLEDGE,
    description="Search the knowledge base of policy articles.",
    args_model=SearchKbArgs,
    input_model=SearchKbInput,
    result_model=KbResult,
    cache_ttl=timedelta(hours=1),
    render=_kb,
)
