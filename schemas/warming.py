"""Contracts of the cache-warming workflow and its activity."""

from __future__ import annotations

from pydantic import BaseModel, Field


class WarmInput(BaseModel):
    top_n: int = Field(default=20, ge=1, le=500)
    since_hours: int = Field(default=24, ge=1, le=24 * 30)
    renew_below_s: int = Field(default=900, ge=0)
    """Renew an entry when less than this is left of its life (or it is gone)."""
    max_parallel: int = Field(default=4, ge=1, le=32)


class HotQuestionsInput(BaseModel):
    top_n: int
    since_hours: int
    renew_below_s: int


class HotQuestion(BaseModel):
    tenant: str
    question: str
    asked: int


class HotQuestionsResult(BaseModel):
    due: list[HotQuestion]
    considered: int


class WarmResult(BaseModel):
    considered: int
    warmed: list[HotQuestion] = Field(default_factory=list)
    failed: list[HotQuestion] = Field(default_factory=list)
