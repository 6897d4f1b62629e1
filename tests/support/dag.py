"""The DAG scheduler without Temporal: plans from step lists, and a clock the tests move."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepError


def plan(*steps: dict[str, Any]) -> Plan:
    return Plan.model_validate({"steps": list(steps)})


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


class Clock:
    def __init__(self) -> None:
        self.t = 0

    def __call__(self) -> datetime:
        self.t += 1
        return datetime.fromtimestamp(self.t, tz=UTC)


def _describe(error: BaseException) -> StepError:
    return StepError(type=type(error).__name__, message=str(error))
