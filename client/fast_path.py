"""What the client asks of the caches it can answer from without starting a run.

`AgentClient` depends on these two narrow readers, not on the cache's implementation: the
exact tier of the path cache in Redis (`AnswerCache`) and step outputs kept by reference
in Postgres (`OutputReader`). `client.readers` has the real ones, over the contracts
alone; a client without Redis or Postgres simply has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult, StepOutcome


class AnswerCache(Protocol):
    """The exact tier, under the version the workers serve."""

    async def exact_answer(self, request: AgentRequest) -> AgentResult | None:
        """The stored answer to exactly this request; None on a miss, when the version
        the workers serve cannot be read, or when the cache is unavailable."""
        ...

    async def close(self) -> None: ...


class OutputReader(Protocol):
    """Step outputs that travelled by reference, read back so results come back whole."""

    async def resolved(self, steps: Sequence[StepOutcome]) -> list[StepOutcome]: ...
