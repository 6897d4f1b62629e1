"""What the gateway's quotas hold a run or stream to, and what one holds: the limits of
`AGENTKEEL_GATEWAY_*`, and the lease of one run or stream (`gateway.quotas`)."""

from __future__ import annotations

from dataclasses import dataclass

from agentkeel.schemas.gateway import QuotaKind
from agentkeel.schemas.lanes import Lane
from agentkeel.settings.model import Settings

__all__ = ["Lease", "QuotaLimits"]


@dataclass(frozen=True)
class QuotaLimits:
    """The limits of `AGENTKEEL_GATEWAY_*` (0: none)."""

    per_key: dict[QuotaKind, int]
    per_tenant: dict[QuotaKind, int]
    lease_s: float
    interactive_per_tenant: int = 0
    """A tenant's runs in flight that start interactive; past them, the overflow lane (0:
    every run interactive)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> QuotaLimits:
        s = settings
        return cls(
            per_key={
                QuotaKind.RUNS: s.gateway_runs_per_key,
                QuotaKind.WATCHES: s.gateway_watches_per_key,
                QuotaKind.STREAMS: s.gateway_streams_per_key,
            },
            per_tenant={
                QuotaKind.RUNS: s.gateway_runs_per_tenant,
                QuotaKind.WATCHES: s.gateway_watches_per_tenant,
                QuotaKind.STREAMS: s.gateway_streams_per_tenant,
            },
            lease_s=float(s.gateway_lease_s),
            # Without lanes every run starts at the default priority: nothing to count.
            interactive_per_tenant=s.gateway_interactive_runs_per_tenant if s.priority_lanes else 0,
        )

    @property
    def sweep_every_s(self) -> float:
        return self.lease_s / 3


@dataclass(frozen=True)
class Lease:
    """What one run or stream holds: its member in the sets of its scopes."""

    member: str
    keys: tuple[str, ...]
    lane: Lane | None = None
    """The lane a run starts in, as its tenant's runs in flight decide (None: a stream's
    lease, or the request's own lane)."""
