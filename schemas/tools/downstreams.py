"""The services behind the tools: each tool names the one it loads, so one cap protects it
across every run and every worker (`AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY`, `..._RATE`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class Downstream:
    name: str
    description: str
    default_concurrency: int | None = None
    """Calls in flight at once across all workers, unless settings say otherwise; None:
    no cap (the worker's own pool bounds it)."""


class SlotWait(BaseModel):
    """Signalled to a run by a tool activity whose call waits for a downstream slot."""

    # Bounded like a request's fields: a signal anyone with namespace access can send must
    # not put a megabyte or a NaN into the run's progress (an invalid one is dropped).
    call_id: str = Field(min_length=1, max_length=200)
    downstream: str = Field(min_length=1, max_length=100)
    waiting: bool
    """True: it waits now; False: it got its slot after `waited_ms`."""
    waited_ms: float = Field(default=0.0, ge=0, le=1e9, allow_inf_nan=False)


@dataclass(frozen=True)
class DownstreamLimit:
    concurrency: int | None = None
    """Calls in flight at once across all workers; None: uncapped."""
    rate: float | None = None
    """Calls started per second across all workers; None: unlimited."""


class ToolProgress(BaseModel):
    """Signalled to a run by a tool activity whose tool reports how far it is (an MCP
    server's progress notification): shown on the step as `reported`."""

    # Bounded like `SlotWait`: anyone with namespace access can send it.
    call_id: str = Field(min_length=1, max_length=200)
    progress: float = Field(ge=0, le=1e12, allow_inf_nan=False)
    total: float | None = Field(default=None, ge=0, le=1e12, allow_inf_nan=False)
    message: str | None = Field(default=None, max_length=200)

    def describe(self) -> str:
        done = f"{self.progress:g}" + (f"/{self.total:g}" if self.total is not None else "")
        return f"{done}: {self.message}" if self.message else done
