"""`agentkeel up` on a shared machine: a taken default port is moved and said, a Temporal
it was not told about is never joined, a told one is (`cli.stack.placement`)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from agentkeel.cli.stack.local import child_env
from agentkeel.cli.stack.placement import place, told, untold_environ
from agentkeel.settings.model import Settings
from agentkeel.settings.ports import free_port, free_port_pair, port_answers


@contextmanager
def _listening() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def _untold(settings: Settings, *fields: str) -> Settings:
    """`settings` as if `fields` were their defaults (no setting named them)."""
    for name in fields:
        settings.__pydantic_fields_set__.discard(name)
    return settings


def test_told_means_a_setting_names_it() -> None:
    assert not told(Settings.from_env({}), "temporal_address")
    assert told(
        Settings.from_env({"AGENTKEEL_TEMPORAL_ADDRESS": "10.0.0.5:7233"}), "temporal_address"
    )
    assert told(Settings.from_env({"TEMPORAL_ADDRESS": "10.0.0.5:7233"}), "temporal_address")
    assert told(Settings.from_env({"AGENTKEEL_GATEWAY_ADDRESS": "127.0.0.1:9"}), "gateway_address")
    assert not told(Settings.from_env({}), "gateway_address")


def test_a_taken_default_temporal_is_not_joined_but_moved_and_said() -> None:
    with _listening() as port:
        # The Web UI's port told, so that only Temporal's is placed here.
        own = Settings(temporal_address=f"127.0.0.1:{port}", temporal_ui_port=free_port())
        settings = _untold(own, "temporal_address")
        placed, notes = place(settings, workers=False)
    host, _, moved = placed.temporal_address.rpartition(":")
    assert host == "127.0.0.1" and int(moved) != port
    assert len(notes) == 1
    assert f"127.0.0.1:{port} already answers, a server this stack did not start" in notes[0]
    assert f"starts its own at 127.0.0.1:{moved}" in notes[0]
    assert "AGENTKEEL_TEMPORAL_ADDRESS names the one to use" in notes[0]


def test_a_told_temporal_that_answers_is_joined() -> None:
    with _listening() as port:
        settings = Settings.from_env({"AGENTKEEL_TEMPORAL_ADDRESS": f"127.0.0.1:{port}"})
        placed, notes = place(settings, workers=False)
        assert port_answers("127.0.0.1", port)
    assert placed.temporal_address == f"127.0.0.1:{port}" and notes == []


def test_a_taken_default_gateway_port_is_moved_a_told_one_kept() -> None:
    with _listening() as temporal, _listening() as gateway:
        base = Settings(
            temporal_address=f"127.0.0.1:{temporal}",
            gateway_address=f"127.0.0.1:{gateway}",
            metrics_address=f"127.0.0.1:{free_port_pair()}",  # told: only the gateway here
        )
        kept, kept_notes = place(base, workers=True)
        moved, notes = place(_untold(base.model_copy(), "gateway_address"), workers=True)
    assert kept.gateway_address == f"127.0.0.1:{gateway}" and kept_notes == []
    assert moved.gateway_address != f"127.0.0.1:{gateway}"
    assert notes == [
        f"gateway: 127.0.0.1:{gateway} is taken, so it listens on {moved.gateway_address}; "
        "AGENTKEEL_GATEWAY_ADDRESS sets it"
    ]


def test_a_background_up_is_not_told_what_it_was_not_told() -> None:
    settings = Settings.from_env({"AGENTKEEL_GATEWAY_ADDRESS": "127.0.0.1:9999"})
    env = untold_environ(settings, {k: v for k, v in child_env(settings).items() if v})
    assert env["AGENTKEEL_GATEWAY_ADDRESS"] == "127.0.0.1:9999"
    assert "AGENTKEEL_TEMPORAL_ADDRESS" not in env
    assert "AGENTKEEL_TEMPORAL_UI_PORT" not in env


def test_taken_default_metrics_ports_are_moved_as_a_pair() -> None:
    with _listening() as temporal, _listening() as metrics:
        base = Settings(
            temporal_address=f"127.0.0.1:{temporal}",
            gateway_address=f"127.0.0.1:{free_port()}",
            metrics_address=f"127.0.0.1:{metrics}",
        )
        kept, kept_notes = place(base, workers=True)
        moved, notes = place(_untold(base.model_copy(), "metrics_address"), workers=True)
    assert kept.metrics_address == f"127.0.0.1:{metrics}" and kept_notes == []
    assert moved.metrics_address != f"127.0.0.1:{metrics}"
    assert notes == [
        f"worker metrics: 127.0.0.1:{metrics} taken, so the CPU worker's are at "
        f"{moved.metrics_address} and the inference worker's at the next port; "
        "AGENTKEEL_METRICS_ADDRESS sets them"
    ]
