"""The event loop every process runs on (`settings.event_loop`): uvloop unless told otherwise."""

from __future__ import annotations

import asyncio

import pytest

from agentkeel.settings.event_loop import chosen_loop, run
from agentkeel.settings.model import Settings, SettingsError

uvloop = pytest.importorskip("uvloop")  # optional: AGENTKEEL_EVENT_LOOP=uvloop


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_auto_runs_on_uvloop_where_it_is_installed() -> None:
    assert chosen_loop("auto") == "uvloop"
    assert issubclass(run(_loop_type(), "auto"), uvloop.Loop)
    assert issubclass(run(_loop_type(), "uvloop"), uvloop.Loop)


def test_asyncio_is_the_default_and_runs_on_the_standard_loop() -> None:
    assert Settings().event_loop == "asyncio"
    assert not issubclass(run(_loop_type()), uvloop.Loop)
    assert not issubclass(run(_loop_type(), "asyncio"), uvloop.Loop)


def test_auto_falls_back_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvloop" else real(name, *a)
    )
    assert chosen_loop("auto") == "asyncio"
    with pytest.raises(ValueError, match="uvloop is not installed"):
        chosen_loop("uvloop")


def test_a_bad_value_names_the_variable() -> None:
    with pytest.raises(SettingsError, match="AGENTKEEL_EVENT_LOOP"):
        Settings.from_env({"AGENTKEEL_EVENT_LOOP": "trio"})
    assert Settings.from_env({"AGENTKEEL_EVENT_LOOP": "asyncio"}).event_loop == "asyncio"
