"""A worker deployment needs its build id (`AGENTKEEL_WORKER_BUILD_ID`)."""

from __future__ import annotations

import pytest

from agentkeel.settings.model import Settings, SettingsError


def test_a_deployment_needs_its_build_id() -> None:
    with pytest.raises(SettingsError, match="WORKER_DEPLOYMENT and AGENTKEEL_WORKER_BUILD_ID"):
        Settings.from_env({"AGENTKEEL_WORKER_DEPLOYMENT": "agentkeel"})
    assert Settings.from_env({}).worker_deployment == ""
