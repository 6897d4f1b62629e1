"""Which Temporal the command line acts on: flags, then the environment, then the Temporal
client profile, then a running local stack, then the default; it says which on stderr. And
`-o json` wherever a command prints. No server: the running stack is its state files, with
this test's own process as its supervisor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentkeel.cli.main import COMMANDS
from agentkeel.cli.parser import WITHOUT_TARGET, build_parser
from agentkeel.cli.stack.local import StackEndpoints
from agentkeel.cli.target import profile_environ, resolve_target, say_target
from agentkeel.settings.model import Settings

STACK = "127.0.0.1:17233"
PROFILE = "temporal.prod.example:7233"


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A local stack that runs from here, as `agentkeel up --detach` leaves its files."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "stack.pid").write_text(str(os.getpid()))
    endpoints = StackEndpoints(
        temporal_address=STACK, ui_url=None, database_url="postgresql://stack/db",
        redis_url="redis://stack:6379/0", pids={"supervisor": os.getpid()},
    )  # fmt: skip
    (state / "endpoints.json").write_text(endpoints.to_json())
    return state


@pytest.fixture
def profile_file(tmp_path: Path) -> Path:
    config = tmp_path / "temporal.toml"
    config.write_text(f'[profile.prod]\naddress = "{PROFILE}"\nnamespace = "prod-ns"\n')
    return config


def _resolve(argv: list[str], env: dict[str, str], state_dir: Path) -> tuple[Settings, str]:
    args = build_parser().parse_args(argv)
    environ = profile_environ(args, {**env, "AGENTKEEL_STATE_DIR": str(state_dir)})
    settings = Settings.from_env(environ)
    target = resolve_target(settings, args, environ)
    return target.settings, target.source


def test_flags_then_environment_then_profile_then_the_running_stack(
    state_dir: Path, profile_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"TEMPORAL_CONFIG_FILE": str(profile_file)}
    own = {**config, "AGENTKEEL_TEMPORAL_ADDRESS": "10.0.0.5:7233"}
    flagged = ["watches", "--address", "10.9.9.9:7233", "--namespace", "ops", "--profile", "prod"]
    settings, source = _resolve(flagged, own, state_dir)
    assert (settings.temporal_address, settings.temporal_namespace) == ("10.9.9.9:7233", "ops")
    assert source == "--address"
    # An explicit address in the environment wins over a running local stack.
    settings, source = _resolve(["watches"], own, state_dir)
    assert (settings.temporal_address, source) == ("10.0.0.5:7233", "AGENTKEEL_TEMPORAL_ADDRESS")
    assert settings.redis_url is None, "the stack's Redis is not another cluster's"
    settings, source = _resolve(["watches"], {**config, "TEMPORAL_ADDRESS": "10.0.0.6:7233"},
                                state_dir)  # fmt: skip
    assert (settings.temporal_address, source) == ("10.0.0.6:7233", "TEMPORAL_ADDRESS")
    settings, source = _resolve(["watches", "--profile", "prod"], config, state_dir)
    assert (settings.temporal_address, settings.temporal_namespace) == (PROFILE, "prod-ns")
    assert source == "profile 'prod'"
    settings, source = _resolve(["watches"], config, state_dir)
    assert (settings.temporal_address, source) == (STACK, "the running local stack")
    assert settings.redis_url == "redis://stack:6379/0"
    settings, source = _resolve(["watches", "--namespace", "ops"], config, state_dir / "none")
    assert (settings.temporal_address, settings.temporal_namespace) == ("127.0.0.1:7233", "ops")
    assert source == "the default"
    args = build_parser().parse_args(["watches"])
    say_target("watches", resolve_target(Settings(), args, {}, stack=False))
    assert capsys.readouterr().err == (
        "agentkeel watches: Temporal 127.0.0.1:7233, namespace 'default' (from the default)\n"
    )


def _leaves(parser: object) -> dict[str, object]:
    """Every runnable (sub)command's parser, by its full name."""
    import argparse

    out: dict[str, object] = {}
    for action in getattr(parser, "_actions", []):
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                inner = _leaves(child)
                out |= {f"{name} {k}".strip(): v for k, v in inner.items()} or {name: child}
    return out


PRINTS_NO_DATA = {"worker", "gateway", "mcp", "demo", "init", "logs"}
"""Servers, and the commands whose output is for a person only: the demo's narration, the
files init wrote, a log's own lines."""


def test_every_command_that_prints_takes_o_json_and_the_temporal_options() -> None:
    leaves = _leaves(build_parser())
    assert {name.split()[0] for name in leaves} == set(COMMANDS)
    for name, parser in leaves.items():
        options = parser._option_string_actions  # type: ignore[attr-defined]
        if name.split()[0] not in PRINTS_NO_DATA:
            assert "-o" in options and "--json" in options, name
        connects = name.split()[0] not in WITHOUT_TARGET
        assert ({"--address", "--namespace", "--profile"} <= options.keys()) == connects, name
    parsed = build_parser().parse_args(["schedule", "pause", "daily", "-o", "json"])
    assert parsed.json is True
