"""Input and result of the `store` activity: the run record, and the path for the cache."""

from __future__ import annotations

from pydantic import BaseModel

from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.schemas.result import AgentResult


class StoreInput(BaseModel):
    tenant: str
    question: str
    conversation_id: str | None = None
    result: AgentResult
    use_cache: bool = True
    actor: Actor = SYSTEM_ACTOR
    request_id: str | None = None
    announce: bool = False
    """Announce the answer once it is recorded (`schemas.answers`): the run's final answer,
    not a record of a cancelled or stopped run."""
    first_run_id: str | None = None
    """The first run of a chain this run continues (continue-as-new): its answer is also
    announced on that run's key, which a caller who started the chain watches."""


class StoreResult(BaseModel):
    recorded: bool
    cached: bool
    cache_ttl_s: int | None = None
