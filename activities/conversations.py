"""A conversation's earlier turns, read back from the run records for the model's context.

Read by the inference worker when it builds a prompt, by reference (tenant and
conversation id): the turns never enter workflow history, which stays small however
long the conversation grows.
"""

from __future__ import annotations

import json

import asyncpg
import structlog

from agentkeel.inference.llm.context import facts_of
from agentkeel.schemas.model_calls import ConversationTurn
from agentkeel.schemas.result import StepOutcome

log = structlog.get_logger(__name__)

RECENT_TURNS = """
SELECT question, answer, steps FROM agent_runs
WHERE tenant = $1 AND conversation_id = $2 AND audience = $3
ORDER BY created_at DESC
LIMIT $4
"""
DEFAULT_TURNS = 8
"""The builder keeps a few verbatim and summarizes the rest; older ones add little."""


class ConversationStore:
    """Recent turns per conversation; a failure to read them costs the context, not the run."""

    def __init__(self, pool: asyncpg.Pool, *, limit: int = DEFAULT_TURNS) -> None:
        self._pool = pool
        self._limit = limit

    async def recent_turns(
        self, tenant: str, conversation_id: str, audience: str = "all"
    ) -> list[ConversationTurn]:
        """Oldest first, as a conversation reads; only turns of runs the audience may see."""
        try:
            rows = await self._pool.fetch(
                RECENT_TURNS, tenant, conversation_id, audience, self._limit
            )
        except (asyncpg.PostgresError, OSError) as exc:
            log.warning("conversation_unavailable", conversation_id=conversation_id, error=str(exc))
            return []
        turns = []
        for row in reversed(rows):
            steps = [StepOutcome.model_validate(s) for s in json.loads(row["steps"] or "[]")]
            turns.append(
                ConversationTurn(
                    question=row["question"] or "",
                    answer=row["answer"] or "",
                    facts=facts_of(steps),
                )
            )
        return turns
