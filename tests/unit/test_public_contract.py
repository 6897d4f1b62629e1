"""The public contract without a server: the published JSON schemas are the models', and
`agentkeel ask` without a Temporal says so in one line."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path


async def test_cli_ask_without_temporal_is_one_clear_line(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AGENTKEEL_TEMPORAL_ADDRESS": "127.0.0.1:1",
        "AGENTKEEL_STATE_DIR": str(tmp_path),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentkeel.cli.main",
        "ask",
        "hello",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 1
    message = err.decode().strip()
    assert "cannot reach Temporal at 127.0.0.1:1" in message
    assert "Traceback" not in message


def test_the_published_json_schemas_match_the_models() -> None:
    from agentkeel.schemas.export import OUT_DIR, rendered

    files = rendered()
    assert {p.name for p in OUT_DIR.glob("*.schema.json")} == set(files)
    for name, text in files.items():
        assert (OUT_DIR / name).read_text() == text, (
            f"{name} is stale: python -m agentkeel.schemas.export"
        )
