"""`agentkeel` as a user runs it with nothing running: the version, logs, the status line, a
bad setting as one line, `status` without a stack."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from agentkeel.cli.stack.logs import follow
from agentkeel.client.status_line import StatusLine, describe_progress
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.result import StepOutcome, StepStatus
from tests.support.cli import _agentkeel


async def test_version(tmp_path: Path) -> None:
    code, out, _ = await _agentkeel("--version", env={"AGENTKEEL_STATE_DIR": str(tmp_path)})
    assert code == 0 and out.startswith("agentkeel ")


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


def test_status_without_a_stack_says_so_and_exits_1(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTKEEL_STATE_DIR": str(tmp_path / "none")}
    done = subprocess.run(
        [sys.executable, "-m", "agentkeel.cli.main", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "no agentkeel stack is running" in done.stdout
