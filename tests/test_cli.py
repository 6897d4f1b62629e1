"""`agentkeel` as a user runs it: version, exit statuses, a timeout that names what is not
answering."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from pathlib import Path

from rich.console import Console
from temporalio.testing import WorkflowEnvironment

from agentkeel.cli.stack.logs import follow
from agentkeel.client.status_line import StatusLine, describe_progress
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import StepOutcome, StepStatus
from tests.support.agent_stack import StackFactory


async def _agentkeel(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentkeel.cli.main",
        *args,
        env={**os.environ, "AGENTKEEL_LOG_LEVEL": "warning", **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_version(tmp_path: Path) -> None:
    code, out, _ = await _agentkeel("--version", env={"AGENTKEEL_STATE_DIR": str(tmp_path)})
    assert code == 0 and out.startswith("agentkeel ")


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


async def test_logs_shows_one_process_or_all_and_follows_new_lines(tmp_path: Path) -> None:
    env = {"AGENTKEEL_STATE_DIR": str(tmp_path)}
    code, _, err = await _agentkeel("logs", env=env)
    assert code == 1 and "agentkeel up --detach" in err

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "worker-cpu.log").write_text("".join(f"cpu line {i}\n" for i in range(100)))
    (logs / "gateway.log").write_text("gateway up\n")
    code, out, _ = await _agentkeel("logs", "cpu", "-n", "3", env=env)
    assert (code, out) == (0, "cpu line 97\ncpu line 98\ncpu line 99\n")
    code, out, _ = await _agentkeel("logs", "-n", "1", env=env)
    assert code == 0 and out.splitlines() == ["gateway    | gateway up", "worker-cpu | cpu line 99"]
    code, _, err = await _agentkeel("logs", "carrier", env=env)
    assert code == 2 and "no log named 'carrier'" in err and "worker-cpu" in err

    out_buffer = io.StringIO()
    files = {"gateway": logs / "gateway.log"}
    following = asyncio.create_task(follow(files, out_buffer, polls=8))
    await asyncio.sleep(0.3)
    append(logs / "gateway.log", "first new\nsecond ")
    await asyncio.sleep(0.4)
    append(logs / "gateway.log", "half\n")
    await following
    assert out_buffer.getvalue() == "first new\nsecond half\n"


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_the_status_line_draws_on_a_terminal_and_nothing_elsewhere() -> None:
    terminal = io.StringIO()
    line = StatusLine("starting", console=Console(file=terminal, force_terminal=True))
    with line:
        line.update("running 2 steps (round 0)")
    assert "running 2 steps (round 0)" in terminal.getvalue()
    piped = io.StringIO()
    with StatusLine("starting", console=Console(file=piped, force_terminal=False)) as quiet:
        quiet.update("routing")
    assert piped.getvalue() == ""

    progress = RunProgress(
        stage="running 2 steps (round 0)",
        steps=[
            StepOutcome(id="a", tool="get_order", status=StepStatus.SUCCEEDED),
            StepOutcome(id="b", tool="track_shipment", status=StepStatus.RUNNING),
        ],
    )
    assert describe_progress(progress) == (
        "running 2 steps (round 0) · 1/2 steps done · track_shipment running"
    )


async def test_a_bad_setting_is_one_line_naming_it_not_a_traceback(tmp_path: Path) -> None:
    env = {"AGENTKEEL_STATE_DIR": str(tmp_path), "AGENTKEEL_LOG_LEVEL": "loud"}
    code, _, err = await _agentkeel("ask", "hi", env=env)
    assert code == 1 and "AGENTKEEL_LOG_LEVEL must be one of" in err
    assert "Traceback" not in err
    env = {"AGENTKEEL_STATE_DIR": str(tmp_path), "AGENTKEEL_GATEWAY_ADDRESS": "0.0.0.0:1"}
    code, _, err = await _agentkeel("gateway", env=env)
    assert code == 1 and "serves only 127.0.0.1" in err and "Traceback" not in err
