"""Free ports are picked outside the OS's ephemeral range, so no outgoing connection can
take one between its pick and its server's bind; where the range leaves no room, the OS
picks."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agentkeel.settings import ports


@pytest.mark.parametrize(
    ("ephemeral", "low", "high"),
    [("20000\t60999\n", 15000, 19999), ("1024\t60000\n", 60001, 65535)],
)
def test_a_free_port_lies_outside_the_ephemeral_range(
    ephemeral: str, low: int, high: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "range").write_text(ephemeral)
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", tmp_path / "range")
    for _ in range(20):
        port = ports.free_port()
        assert low <= port <= high
        pair = ports.free_port_pair()
        assert low <= pair < high
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free: it binds


def test_without_room_outside_the_range_the_os_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "range").write_text("1024 65535\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", tmp_path / "range")
    assert not ports._picked_range()
    port = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_a_port_is_never_picked_twice_by_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stack picks every port before binding any: a pick must not hand out again a port
    (or a pair's second port) picked a moment ago, though nothing listens on it yet."""
    monkeypatch.setattr(ports, "_HANDED_OUT", set())
    monkeypatch.setattr(ports, "_picked_range", lambda: range(21000, 21004))
    pair = ports.free_port_pair()
    singles = [ports.free_port(), ports.free_port()]
    assert sorted([pair, pair + 1, *singles]) == [21000, 21001, 21002, 21003]
    # The range is used up: the OS picks, from outside it.
    assert ports.free_port() not in range(21000, 21004)
