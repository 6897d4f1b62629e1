"""`agentkeel ask` as a process against the session's dev server: exit statuses, and a
timeout that names the queue nobody polls."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from tests.support.agent_stack import StackFactory
from tests.support.cli import _agentkeel


async def test_ask_gives_up_at_its_timeout_naming_the_queue_nobody_polls(
    temporal_env: WorkflowEnvironment, tmp_path: Path, redis_url: str
) -> None:
    env = {
        "AGENTKEEL_STATE_DIR": str(tmp_path),
        "AGENTKEEL_TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "AGENTKEEL_TASK_QUEUE": "nobody-polls-this",
        "AGENTKEEL_REDIS_URL": redis_url,
    }
    code, _, err = await _agentkeel("ask", "Where is order 1001?", "--timeout", "2", env=env)
    assert code == 3, err
    assert "no answer within 2 s" in err and "'nobody-polls-this'" in err
    assert "Traceback" not in err


async def test_a_failed_step_is_exit_status_1_and_an_answer_is_0(
    make_stack: StackFactory, tmp_path: Path, redis_url: str
) -> None:
    stack = await make_stack()
    env = _cli_env(stack, tmp_path, redis_url)
    tenant = ["--tenant", stack.tenant, "--no-cache"]
    code, out, err = await _agentkeel("ask", "Where is order 999999?", *tenant, env=env)
    assert code == 1, (out, err)
    code, out, err = await _agentkeel("ask", "Where is order 1001?", *tenant, env=env)
    assert code == 0, (out, err)
    assert "1001" in out


async def test_ask_shows_each_steps_start_and_result_prints_the_answer_again(
    make_stack: StackFactory, tmp_path: Path, redis_url: str
) -> None:
    stack = await make_stack()
    env = _cli_env(stack, tmp_path, redis_url)
    tenant = ["--tenant", stack.tenant, "--no-cache"]
    asked = "Is SKU-00001 in stock, and SKU-00002, and SKU-00003?"
    code, out, err = await _agentkeel("ask", asked, *tenant, env=env)
    assert code == 0, (out, err)
    # Three reads in parallel: each shows its time and its start after the run's start.
    starts = re.findall(
        r"^    s\d\s+check_inventory\s+ok \d+ ms, started at \+(\d+) ms$", out, re.M
    )
    assert len(starts) == 3 and max(map(int, starts)) - min(map(int, starts)) < 50, out
    [workflow_id] = re.findall(r"^  workflow (\S+)$", out, re.M)
    code, again, err = await _agentkeel("result", workflow_id, env=env)
    assert code == 0, err
    answer = out.splitlines()[0].strip()
    assert again.splitlines()[0].strip() == answer and "started at +" in again
    code, shown, _ = await _agentkeel("result", workflow_id, "-o", "json", env=env)
    assert code == 0 and json.loads(shown)["answer"].strip() == answer


def _cli_env(stack: Any, state: Path, redis_url: str) -> dict[str, str]:
    """The CLI pointed at `stack`: its Temporal, task queue and Redis, its state in `state`."""
    return {
        "AGENTKEEL_STATE_DIR": str(state),
        "AGENTKEEL_TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "AGENTKEEL_TASK_QUEUE": stack.settings.task_queue,
        "AGENTKEEL_REDIS_URL": redis_url,
    }
