"""`agentkeel schedule` on the command line against the session's dev server: add, list,
pause, delete, and one line with status 2 for what it refuses."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

import agentkeel.cli.main
from tests.support.schedules import QUESTION, _exists
from tests.support.schedules import schedule_ids as schedule_ids


def _unique_id() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


def _cli_env(client: Client, tmp_path: Path) -> dict[str, str]:
    """What `agentkeel` reads to reach the test server (and no stack a developer runs)."""
    return {
        "AGENTKEEL_TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "AGENTKEEL_TEMPORAL_NAMESPACE": client.namespace,
        "AGENTKEEL_STATE_DIR": str(tmp_path),
    }


async def test_the_cli_adds_lists_pauses_and_deletes(
    client: Client,
    schedule_ids: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in _cli_env(client, tmp_path).items():
        monkeypatch.setenv(name, value)
    # In-process, `main` must return instead of leaving the process, and leave logging be.
    monkeypatch.setattr(agentkeel.cli.main, "_exit_skipping_teardown", lambda code: code)
    monkeypatch.setattr(agentkeel.cli.main, "configure_logging", lambda *_: None)
    monkeypatch.setattr(agentkeel.cli.main, "forward_core_logs", lambda *_: None)

    async def cli(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        # `main` runs its own event loop, so it runs beside this test's, in a thread.
        code = await asyncio.to_thread(agentkeel.cli.main.main, ["schedule", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    schedule_id = _unique_id()
    schedule_ids.append(schedule_id)
    code, out, _ = await cli(
        "add", QUESTION, "--every", "1h30m", "--id", schedule_id,
        "--tenant", "acme", "--as", "customer:7", "--paused",
    )  # fmt: skip
    assert code == 0 and out.startswith(f"schedule {schedule_id}: every 1h30m, paused")

    for _ in range(50):  # the listing is eventually consistent
        code, out, _ = await cli("list", "--json")
        found = [s for s in json.loads(out) if s["id"] == schedule_id]
        if found:
            break
        await asyncio.sleep(0.1)
    [listed] = found
    assert listed["paused"] and listed["every"] == "1h30m" and listed["next_run"] is None
    assert (listed["question"], listed["tenant"]) == (QUESTION, "acme")
    assert listed["actor"] == {"role": "customer", "subject": "7", "name": None}

    assert (await cli("unpause", schedule_id))[0] == 0
    code, out, _ = await cli("list")
    [row] = [line for line in out.splitlines() if line.startswith(schedule_id)]
    assert row.split()[1:4] == ["active", "every", "1h30m"]
    assert "customer 7" in row and row.endswith(QUESTION)

    assert (await cli("pause", schedule_id, "--note", "holiday"))[0] == 0
    assert (await client.get_schedule_handle(schedule_id).describe()).schedule.state.paused

    code, _, err = await cli("add", QUESTION, "--every", "1h", "--id", schedule_id)
    assert code == 2 and "already exists" in err

    assert (await cli("delete", schedule_id))[0] == 0
    assert not await _exists(client, schedule_id)

    refusals = {
        ("delete", schedule_id): f"no schedule '{schedule_id}'",
        ("add", QUESTION, "--every", "0s"): "--every must be at least 1s, got '0s'",
        ("add", " ", "--every", "1m"): "invalid request: question",
        (
            "add",
            QUESTION,
            "--every",
            "1m",
            "--as",
            "customer:0",
        ): "actor.subject '0' is not a customer subject",
        ("add", QUESTION, "--cron", "every day"): "--cron 'every day' is not valid",
    }
    for argv, message in refusals.items():
        code, out, err = await cli(*argv)
        assert (code, out) == (2, ""), argv
        # The refusal in one line; one that came after connecting (from Temporal) follows
        # the line saying which Temporal the command acted on, and why.
        *said, refusal = err.splitlines()
        assert message in refusal and len(said) <= 1, err
        assert all(line.endswith("(from AGENTKEEL_TEMPORAL_ADDRESS)") for line in said), err


async def test_the_cli_process_exits_2_with_one_line(client: Client, tmp_path: Path) -> None:
    """The real entry point, with its process exit: no traceback, one line, status 2."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentkeel.cli.main", "schedule", "pause", "no-such-schedule",
        env={**os.environ, **_cli_env(client, tmp_path)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 2
    assert out == b""
    # The Temporal it acted on, and why (said as it connected); then the refusal.
    target, refusal = err.decode().splitlines()
    assert target.endswith("(from AGENTKEEL_TEMPORAL_ADDRESS)")
    assert refusal == "agentkeel schedule pause: no schedule 'no-such-schedule'"
