"""The value types of settings: modes, ranges, durations and addresses, each naming what it
accepts (`settings.env.Accepts`) for the one-line error and the generated reference; and
what every group of settings shares, the variables' prefix and the model config."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field

from agentkeel.settings.env import Accepts
from agentkeel.settings.errors import SettingsError

ENV_PREFIX = "AGENTKEEL_"
"""The prefix of every setting's variable: a field `x` is read from `AGENTKEEL_X`."""

MODEL_CONFIG = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

OnOff = Literal["on", "off"]
LogLevel = Literal["debug", "info", "warning", "error", "critical"]
LogFormat = Literal["auto", "json", "console"]
EngineName = Literal["", "rules", "openai", "vllm"]
Port = Annotated[int, Field(ge=1, le=65535)]
Fraction = Annotated[float, Field(ge=0, le=1)]
AtLeastOne = Annotated[int, Field(ge=1)]
NotNegative = Annotated[int, Field(ge=0)]
Milliseconds = Annotated[float, Field(ge=0)]

_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(raw: str, var: str) -> float:
    """Seconds from `90`, `90s`, `15m`, `24h` or `2d`; a `SettingsError` naming `var` else."""
    text = raw.strip().lower()
    unit = text[-1:] if text[-1:].isalpha() else ""
    number = text[: len(text) - len(unit)]
    try:
        seconds = float(number) * _DURATION_UNITS[unit]
    except (KeyError, ValueError):
        raise SettingsError(f"{var} must be a duration like 90s, 15m or 24h, got {raw!r}") from None
    if seconds <= 0:
        raise SettingsError(f"{var} must be positive, got {raw!r}")
    return seconds


def _duration(raw: str) -> str:
    parse_duration(raw, "a duration")
    return raw


def _host_port(raw: str) -> str:
    host, _, port = raw.strip().rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("not host:port")
    return raw


def metrics_ip_port(address: str) -> tuple[str, int] | None:
    """`(ip, port)` of an `ip:port` (`localhost` is 127.0.0.1: the Temporal runtime binds
    only a literal address); None when `address` is not one."""
    host, _, port = address.strip().rpartition(":")
    host = "127.0.0.1" if host == "localhost" else host
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


def _metrics_address(raw: str) -> str:
    if raw.strip().lower() not in ("", "off") and metrics_ip_port(raw) is None:
        raise ValueError("not ip:port")
    return raw


Duration = Annotated[
    str, AfterValidator(_duration), Accepts("a duration: seconds, or a number with s, m, h or d")
]
HostPort = Annotated[str, AfterValidator(_host_port), Accepts("host:port")]
MetricsAddress = Annotated[
    str,
    AfterValidator(_metrics_address),
    Accepts("ip:port (127.0.0.1:9464, 0.0.0.0:9464), off, or empty"),
]
