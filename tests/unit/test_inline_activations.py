"""`AGENTKEEL_WORKFLOW_ACTIVATIONS`: an unknown mode is refused by name."""

from __future__ import annotations

import pytest

from agentkeel.settings.model import Settings, SettingsError


def test_an_unknown_mode_is_refused_by_name() -> None:
    with pytest.raises(SettingsError, match="WORKFLOW_ACTIVATIONS"):
        Settings.from_env({"AGENTKEEL_WORKFLOW_ACTIVATIONS": "fibers"})
