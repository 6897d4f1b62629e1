"""The services behind the tools: each tool names the one it loads, so one cap protects it
across every run and every worker (`AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY`, `..._RATE`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class Downstream:
    name: str
    description: str
    default_concurrency: int | None = None
    """Calls in flight at once across all workers, unless settings say otherwise; None:
    no cap (the worker's own pool bounds it)."""


class SlotWait(BaseModel):
    """Signalled to a run by a tool activity whose call waits for a downstream slot."""

    call_id: str
    downstream: str
    waiting: bool
    """True: it waits now; False: it got its slot after `waited_ms`."""
    waited_ms: float = 0.0


@dataclass(frozen=True)
class DownstreamLimit:
    concurrency: int | None = None
    """Calls in flight at once across all workers; None: uncapped."""
    rate: float | None = None
    """Calls started per second across all workers; None: unlimited."""
