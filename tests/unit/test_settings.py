"""Settings typed once: read from `AGENTKEEL_*`, refused in one line naming the variable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentkeel.examples.shop.domain import domain as _shop
from agentkeel.schemas.tools.downstreams import DownstreamLimit
from agentkeel.settings import doc as settings_doc
from agentkeel.settings.model import OTHER_VARIABLES, Settings, SettingsError, speculative_calls
from tests.support.paths import ROOT

DOWNSTREAMS = {d.name: d for d in _shop.downstreams}


def from_env(**env: str) -> Settings:
    return Settings.from_env({f"AGENTKEEL_{k}": v for k, v in env.items()})


def refused(**env: str) -> str:
    with pytest.raises(SettingsError) as caught:
        from_env(**env)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_settings_reference_is_what_the_generator_writes() -> None:
    written = (ROOT / "docs" / "settings.md").read_text()
    assert written == settings_doc.render(), (
        "docs/settings.md is stale: python -m agentkeel.settings.doc"
    )


def test_a_misspelt_variable_is_refused_naming_the_nearest_setting() -> None:
    assert refused(SEMANTIC_TRESHOLD="0.9") == (
        "AGENTKEEL_SEMANTIC_TRESHOLD is not a setting (did you mean AGENTKEEL_SEMANTIC_THRESHOLD?)"
    )
    assert refused(LIGHT_FOO="x").startswith("AGENTKEEL_LIGHT_FOO is not a setting")
    assert refused(LIGHT="x").startswith("AGENTKEEL_LIGHT is not a setting")
    assert "AGENTKEEL_LIGHT_VLLM_MAX_NUM_SEQS?" in refused(
        LIGHT_ENGINE="vllm", LIGHT_MODEL="/m", LIGHT_VLLM_MAX_SEQS="4"
    )


def test_numbers_out_of_their_range_are_refused() -> None:
    assert refused(SEMANTIC_THRESHOLD="1.7") == (
        "AGENTKEEL_SEMANTIC_THRESHOLD must be a number from 0 to 1, got '1.7'"
    )
    assert refused(DB_POOL_MAX="-3") == (
        "AGENTKEEL_DB_POOL_MAX must be an integer of 1 or more, got '-3'"
    )
    assert refused(TEMPORAL_UI_PORT="70000") == (
        "AGENTKEEL_TEMPORAL_UI_PORT must be an integer from 1 to 65535, got '70000'"
    )
    assert refused(MERGE_WINDOW_MS="-1").startswith("AGENTKEEL_MERGE_WINDOW_MS must be a number")
    assert refused(PLAN_ATTEMPTS="many").startswith("AGENTKEEL_PLAN_ATTEMPTS must be an integer")
    assert refused(APPROVAL_TIMEOUT="soon").startswith("AGENTKEEL_APPROVAL_TIMEOUT must be a dura")
    assert refused(DOWNSTREAM_CARRIER_RATE="0").startswith(
        "AGENTKEEL_DOWNSTREAM_CARRIER_RATE must be a number above 0"
    )


def test_unknown_modes_are_refused_with_what_is_accepted() -> None:
    assert refused(READING_CACHE="maybe") == (
        "AGENTKEEL_READING_CACHE must be on or off, got 'maybe'"
    )
    assert refused(TOOL_CACHE_STALE="sometimes") == (
        "AGENTKEEL_TOOL_CACHE_STALE must be one of always, deadline, never, got 'sometimes'"
    )
    assert refused(LIGHT_ENGINE="gpt").startswith("AGENTKEEL_LIGHT_ENGINE must be one of rules")
    assert refused(METRICS_ADDRESS="somewhere:1").startswith("AGENTKEEL_METRICS_ADDRESS must be")
    assert from_env(LOG_LEVEL="WARNING").log_level == "warning"


def test_test_and_ci_variables_pass_and_every_one_in_use_is_declared() -> None:
    Settings.from_env(dict.fromkeys(OTHER_VARIABLES, "1"))
    used: set[str] = set()
    for path in [
        *(ROOT / "tests").glob("*.py"),
        *(ROOT / "tests").glob("*/*.py"),  # the tiers and their support
        *(ROOT / "bench").glob("*.py"),
        ROOT / ".ci" / "run",
        ROOT / "Dockerfile",
        ROOT / "docker-compose.yml",
    ]:
        text = path.read_text()
        # What a program reads (`os.environ.get("X")`, `X_ENV = "X"`) or a shell expands.
        used.update(re.findall(r'environ(?:\.get\(|\[)"(AGENTKEEL_[A-Z0-9_]+)"', text))
        used.update(re.findall(r'_ENV = "(AGENTKEEL_[A-Z0-9_]+)"', text))
        used.update(re.findall(r"\$\{(AGENTKEEL_[A-Z0-9_]+)", text))
    assert used, "the scan found nothing: its patterns are out of date"
    Settings.from_env(dict.fromkeys(used, ""))


def test_a_loaded_domains_variables_pass_when_named() -> None:
    env = {"AGENTKEEL_SHOP_CURRENCY": "EUR", "AGENTKEEL_SHOP_X_Y": "1", "AGENTKEEL_GREETING": "hi"}
    with pytest.raises(SettingsError, match="AGENTKEEL_GREETING is not a setting"):
        Settings.from_env(env, extra_prefixes=["AGENTKEEL_SHOP_"])
    Settings.from_env(env, extra_known=["AGENTKEEL_GREETING"], extra_prefixes=["AGENTKEEL_SHOP_"])


def test_tiers_and_option_groups_are_read_from_their_variables() -> None:
    s = from_env(
        LIGHT_URL="http://127.0.0.1:9/v1",
        LIGHT_MODEL="router",
        HEAVY_ENGINE="vllm",
        HEAVY_MODEL="/models/planner",
        HEAVY_VLLM_MAX_NUM_SEQS="32",
        DOWNSTREAM_CARRIER_CONCURRENCY="4",
        DOWNSTREAM_CARRIER_RATE="20",
        DOMAIN="agentkeel.examples.shop:domain",
    )
    assert (s.light.url, s.light.model) == ("http://127.0.0.1:9/v1", "router")
    assert s.model_tier("heavy").vllm == {"max_num_seqs": "32"}
    assert s.downstream == {"carrier_concurrency": "4", "carrier_rate": "20"}
    assert s.downstream_limits(DOWNSTREAMS)["carrier"] == DownstreamLimit(concurrency=4, rate=20)
    assert s.domain == "agentkeel.examples.shop:domain"
    # What a child process is given reads back as the same settings.
    assert Settings.from_env({k: v for k, v in s.to_env().items() if v is not None}) == s


def test_settings_made_in_code_ignore_the_environment_and_stay_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTKEEL_TASK_QUEUE", "from-the-environment")
    monkeypatch.setenv("AGENTKEEL_SPECULATION", "off")
    made = Settings(database_url="postgresql://x/y")
    assert made.task_queue == "agentkeel" and speculative_calls(made) == 4
    assert Settings.from_env().task_queue == "from-the-environment"
    with pytest.raises(ValidationError):
        made.task_queue = "other"
    with pytest.raises(ValidationError):
        Settings(semantic_threshold=1.7)
    assert made.model_copy(update={"task_queue": "q"}).inference_task_queue == "q-inference"


def test_a_process_with_a_misspelt_variable_exits_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTKEEL_STATE_DIR": str(tmp_path), "AGENTKEEL_SEMANTIC_TRESHOLD": "0.9"}
    done = subprocess.run(
        [sys.executable, "-m", "agentkeel.cli.main", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "agentkeel status: AGENTKEEL_SEMANTIC_TRESHOLD is not a setting "
        "(did you mean AGENTKEEL_SEMANTIC_THRESHOLD?)"
    ]
