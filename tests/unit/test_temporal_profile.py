"""The Temporal connection settings without a server: a TLS profile that cannot be read stops
the process at start, and settings built in code never take a developer's profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkeel.settings.model import Settings, SettingsError


def test_a_profile_that_cannot_be_read_stops_the_process_at_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"No such file"):
        Settings.from_env(
            {
                "TEMPORAL_TLS_CLIENT_CERT_PATH": str(tmp_path / "missing.pem"),
                "TEMPORAL_TLS_CLIENT_KEY_PATH": str(tmp_path / "missing.key"),
            }
        )
    with pytest.raises(SettingsError, match="must be given together"):
        Settings.from_env({"TEMPORAL_TLS_CLIENT_CERT_DATA": "x"})
    with pytest.raises(SettingsError, match="'nosuch'"):
        Settings.from_env(
            {"TEMPORAL_CONFIG_FILE": str(tmp_path / "none.toml"), "TEMPORAL_PROFILE": "nosuch"}
        )
    # Settings built in code never take a developer's profile.
    assert Settings().temporal_connect_options() == {
        "target_host": "127.0.0.1:7233",
        "namespace": "default",
        "tls": False,
    }
