"""Ports on this machine: free ones to pick, and a taken one named with its setting.

Shared by every program that listens (the gateway, the workers' health and metrics
endpoints, the local stack's servers) and by the tests that start them beside each other.
"""

from __future__ import annotations

import socket

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


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the OS's choice): for stacks beside another one."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A port that is free and whose next port is free too (the workers' metrics take two:
    `stack_metrics_addresses`): both held while checked, so neither is taken meanwhile."""
    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind((host, 0))
            port = int(first.getsockname()[1])
            try:
                second.bind((host, port + 1))
            except OSError:
                continue
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
