"""The rows of `bench.lanes`: each one's interactive runs, and how a row is printed."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from bench.lanes_burst import FLOOD_TENANT

TENANTS = ("default", "tenant-b", "tenant-c", "tenant-d")
"""The interactive tenants (`default` holds the seeded shop; the others find no rows, so
their runs answer "not found": the same work for every row of the table)."""


@dataclass
class Row:
    name: str
    warmed: int | None = None
    """The warmer's runs (`--warmer real`)."""
    latencies: list[float] = field(default_factory=list)
    by_tenant: dict[str, list[float]] = field(default_factory=dict)

    def add(self, other: Row) -> None:
        """Pool `other`'s runs into this row (the same row of another round)."""
        self.latencies += other.latencies
        for tenant, took in other.by_tenant.items():
            self.by_tenant.setdefault(tenant, []).extend(took)
        if other.warmed is not None:
            self.warmed = (self.warmed or 0) + other.warmed

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies) or [0.0]
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def medians(self) -> dict[str, float]:
        return {t: statistics.median(v) for t, v in self.by_tenant.items() if v}


def print_row(row: Row, alone: Row) -> None:
    medians = row.medians()
    flood = medians.pop(FLOOD_TENANT, None)
    spread = max(medians.values()) / min(medians.values())
    tenants = " ".join(f"{t}={medians[t]:.0f}" for t in TENANTS)
    flooded = "" if flood is None else f" (flood: {flood:.0f}, its runs from the burst's start)"
    if row.warmed is not None:
        flooded += f" (warmer: {row.warmed} runs in all)"
    print(
        f"{row.name:<17} {row.p(0.5):>7.0f} {row.p(0.99):>7.0f} "
        f"{row.p(0.99) / alone.p(0.99):>9.2f} {spread:>11.2f}   {tenants}{flooded}",
        flush=True,
    )
