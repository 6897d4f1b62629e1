"""`agentkeel ask` as a process against the session's dev server: exit statuses, and a
timeout that names the queue nobody polls."""

from __future__ import annotations

from pathlib import Path

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
    env = {
        "AGENTKEEL_STATE_DIR": str(tmp_path),
        "AGENTKEEL_TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "AGENTKEEL_TASK_QUEUE": stack.settings.task_queue,
        "AGENTKEEL_REDIS_URL": redis_url,
    }
    tenant = ["--tenant", stack.tenant, "--no-cache"]
    code, out, err = await _agentkeel("ask", "Where is order 999999?", *tenant, env=env)
    assert code == 1, (out, err)
    code, out, err = await _agentkeel("ask", "Where is order 1001?", *tenant, env=env)
    assert code == 0, (out, err)
    assert "1001" in out
