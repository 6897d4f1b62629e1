"""What the cache warmer needs from the outside: the hot questions whose entries run out."""

from __future__ import annotations

import asyncpg
from temporalio import activity

from agentkeel.activities.cache.backend import CacheUnavailable
from agentkeel.activities.cache.path_cache import PathCache
from agentkeel.schemas import names
from agentkeel.schemas.cache_lookup import normalize_question
from agentkeel.schemas.tools import SIDE_EFFECT_TOOLS
from agentkeel.schemas.warming import HotQuestion, HotQuestionsInput, HotQuestionsResult

# Most asked questions of the window, per tenant; runs with a side effect (a step of a tool
# that is not idempotent, $3) are never replayed.
_HOT_QUESTIONS_SQL = """
SELECT tenant, question, count(*) AS asked
FROM agent_runs
WHERE created_at > now() - make_interval(hours => $1)
  AND tenant IS NOT NULL AND question IS NOT NULL
  AND NOT EXISTS (
    SELECT 1 FROM jsonb_array_elements(
      CASE WHEN jsonb_typeof(steps) = 'array' THEN steps ELSE '[]'::jsonb END) AS step
    WHERE step->>'tool' = ANY($3::text[])
  )
  -- The warmer's own runs bypass the lookup: counting them would keep a question hot forever.
  AND cache_status IS DISTINCT FROM 'bypass'
  -- The warmer runs as a trusted service: it renews what that audience may be served.
  AND audience = 'all'
GROUP BY tenant, question
ORDER BY asked DESC
LIMIT $2
"""


class WarmingActivities:
    def __init__(self, pool: asyncpg.Pool, paths: PathCache) -> None:
        self._pool = pool
        self._paths = paths

    @activity.defn(name=names.HOT_QUESTIONS)
    async def hot_questions(self, request: HotQuestionsInput) -> HotQuestionsResult:
        # Over-fetch: spellings of one question count together once normalized.
        rows = await self._pool.fetch(
            _HOT_QUESTIONS_SQL, request.since_hours, request.top_n * 4, sorted(SIDE_EFFECT_TOOLS)
        )
        merged: dict[tuple[str, str], HotQuestion] = {}
        for row in rows:
            key = (row["tenant"], normalize_question(row["question"]))
            if key in merged:
                merged[key].asked += row["asked"]
            else:
                merged[key] = HotQuestion(
                    tenant=row["tenant"], question=row["question"], asked=row["asked"]
                )
        hottest = sorted(merged.values(), key=lambda q: -q.asked)[: request.top_n]
        due: list[HotQuestion] = []
        for hot in hottest:
            try:
                left_s = await self._paths.answer_fresh_for_s(hot.tenant, hot.question)
            except CacheUnavailable:
                left_s = -1.0  # cannot tell: warming costs one run, serving stale costs more
            if left_s < request.renew_below_s:
                due.append(hot)
        return HotQuestionsResult(due=due, considered=len(hottest))
