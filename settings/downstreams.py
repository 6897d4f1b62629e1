"""The settings of calls to downstream services: caps and rates per service, a tenant's
share of them, merged and shared calls.

A base of `settings.model.Settings` (each field is `AGENTKEEL_<FIELD>`; the caps an option
group, `AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY` / `_RATE`), kept apart because they protect
the services behind the tools, whose names only the served domain's catalog knows: the
values are checked when settings are read, the names when the catalog is at hand
(`downstream_limits`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pydantic import BaseModel, Field, field_validator

from agentkeel.schemas.tools.downstreams import Downstream, DownstreamLimit
from agentkeel.settings.env import setting_error
from agentkeel.settings.errors import SettingsError
from agentkeel.settings.types import ENV_PREFIX, MODEL_CONFIG, Fraction, Milliseconds, OnOff

__all__ = ["DownstreamSettings"]


def _no_options() -> Mapping[str, str]:
    return MappingProxyType({})


class DownstreamSettings(BaseModel):
    """Caps, rates and the tenant share of each downstream; merged and shared calls."""

    model_config = MODEL_CONFIG

    downstream: Mapping[str, str] = Field(default_factory=_no_options)
    """Caps per downstream service, from `AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY` (calls in
    flight at once across all workers, 1 or more) and `..._RATE` (calls started per second,
    above 0); see `downstream_limits`."""
    tenant_downstream_share: Fraction = 0.5
    """The most of a downstream's concurrency cap one tenant's calls may hold at once (at
    least one slot): the rest stays free for every other tenant, whatever one sends."""
    merge_window_ms: Milliseconds = 2.0
    """How long a batching tool's call waits for others to go with it in one request; 0
    sends each alone (see `bench/downstream.py` for what it costs and saves)."""
    share_reads: OnOff = "on"
    """`on`: an idempotent read already in flight (same tool, arguments and audience) is
    awaited by the next caller instead of being sent again; `off`."""

    @field_validator("downstream", mode="after")
    @classmethod
    def _downstream_options(cls, options: Mapping[str, str]) -> Mapping[str, str]:
        for key, raw in options.items():
            var = f"{ENV_PREFIX}DOWNSTREAM_{key.upper()}"
            name, _, what = key.rpartition("_")
            if not name or what not in ("concurrency", "rate"):
                raise setting_error(
                    f"{var} is not a setting: use {ENV_PREFIX}DOWNSTREAM_<NAME>_CONCURRENCY "
                    "or _RATE"
                )
            if not _positive(raw, int if what == "concurrency" else float):
                wanted = "an integer of 1 or more" if what == "concurrency" else "a number above 0"
                raise setting_error(f"{var} must be {wanted}, got {raw!r}")
        return MappingProxyType(dict(options))

    def downstream_limits(
        self, downstreams: Mapping[str, Downstream]
    ) -> dict[str, DownstreamLimit]:
        """Each downstream's cap and rate: the catalog's defaults, overridden by settings.

        The catalog is the caller's (the domain's services), so a name that is not in it is
        refused here, naming the variable; the values were checked when settings were read.
        """
        limits = {
            name: DownstreamLimit(concurrency=d.default_concurrency)
            for name, d in downstreams.items()
        }
        for key, raw in self.downstream.items():
            name, _, what = key.rpartition("_")
            if name not in downstreams:
                known = ", ".join(sorted(downstreams))
                raise SettingsError(
                    f"{ENV_PREFIX}DOWNSTREAM_{key.upper()} is not a setting: use "
                    f"{ENV_PREFIX}DOWNSTREAM_<NAME>_CONCURRENCY or _RATE with NAME one of {known}"
                )
            current = limits[name]
            limits[name] = (
                DownstreamLimit(concurrency=int(raw), rate=current.rate)
                if what == "concurrency"
                else DownstreamLimit(concurrency=current.concurrency, rate=float(raw))
            )
        return limits


def _positive(raw: str, kind: type[int] | type[float]) -> bool:
    try:
        value = kind(raw)
    except ValueError:
        return False
    return value >= 1 if kind is int else value > 0
