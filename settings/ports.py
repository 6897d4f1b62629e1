"""Ports on this machine: free ones to pick, and a taken one named with its setting.

Shared by every program that listens (the gateway, the workers' health and metrics
endpoints, the local stack's servers) and by the tests that start them beside each other.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from agentkeel.settings.errors import StartupError


class PortTaken(StartupError):
    """A port a process must listen on is taken; the message names the setting to change."""


def port_answers(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True when something accepts a TCP connection at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


LOWEST_PICKED = 15000
"""Below it are the ports well-known servers listen on (Postgres, Redis, Temporal)."""
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
"""Where Linux says which ports it gives outgoing connections (elsewhere: IANA's 49152)."""


def _picked_range() -> range:
    """Ports outside the OS's ephemeral range: no outgoing connection is given one of them,
    so a port found free here stays free until its server binds it (one picked by the OS,
    from the ephemeral range, can be taken meanwhile by any process's next connection).
    Below the range where there is room, else above it; an empty range where neither has
    (`free_port` then takes the OS's choice)."""
    try:
        first, last = (int(p) for p in EPHEMERAL_RANGE.read_text().split()[:2])
    except (OSError, ValueError):
        first, last = 49152, 65535
    if first - LOWEST_PICKED >= 1000:
        return range(LOWEST_PICKED, first)
    if 65535 - last >= 1000:
        return range(last + 1, 65536)
    return range(0)


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return not port_answers(host, port, timeout_s=0.1)


_HANDED_OUT: set[int] = set()
"""The ports this process has picked. A stack picks all of its ports before its servers
bind any, so a port found free may be one picked a moment ago for another of its servers
(two servers on one port: the second fails to start); a picked port is never picked again."""


def _unpicked(host: str, port: int) -> bool:
    return port not in _HANDED_OUT and _bindable(host, port)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, outside the ephemeral range, and not picked before by
    this process: for stacks beside another one."""
    picked = _picked_range()
    for _ in range(200 if picked else 0):
        port = random.choice(picked)
        if _unpicked(host, port):
            _HANDED_OUT.add(port)
            return port
    for _ in range(200):  # the OS's choice: no room outside its range, or none free there
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:  # (the OS hands a closed port out again in time)
            _HANDED_OUT.add(port)
            return port
    raise StartupError(f"no free port found on {host} that this process has not picked")


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A port that is free and whose next port is free too (the workers' metrics take two:
    `stack_metrics_addresses`)."""
    picked = _picked_range() or range(LOWEST_PICKED, 65536)
    for _ in range(200):
        port = random.choice(picked[:-1])
        if _unpicked(host, port) and _unpicked(host, port + 1):
            _HANDED_OUT.update((port, port + 1))
            return port
    raise StartupError(f"no two consecutive free ports found on {host}")


def ensure_port_free(host: str, port: int, what: str, setting: str | None = None) -> None:
    """Raise a `PortTaken` naming the port, its role and the setting that moves it."""
    moves = f"; set {setting} to move it" if setting else ""
    if port_answers(host, port):
        raise PortTaken(f"port {port} ({what}) is already in use on {host}{moves}")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        # As servers do: a port whose old connections linger in TIME_WAIT is still usable.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise PortTaken(
                f"port {port} ({what}) cannot be bound on {host}: {exc}{moves}"
            ) from None
