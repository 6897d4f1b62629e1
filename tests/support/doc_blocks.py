"""Blocks of a documentation page, and running them against a stack as a user would
(`tests/fleet/test_docs_run.py`)."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from pathlib import Path

from agentkeel.cli.stack.local import StackEndpoints, child_env
from agentkeel.settings.model import Settings

RUN_S = 120


def blocks(page: str, language: str) -> list[str]:
    return [b for lang, b in re.findall(r"```(\w*)\n(.*?)```", page, re.S) if lang == language]


def section(page: str, heading: str) -> str:
    start = page.index(f"\n## {heading}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end > 0 else None]


class Docs:
    def __init__(self, settings: Settings, endpoints: StackEndpoints, state: Path) -> None:
        self.settings, self.endpoints, self.state = settings, endpoints, state
        env = {k: v for k, v in child_env(settings, endpoints).items() if v is not None}
        self.env = {**env, "AGENTKEEL_LOG_LEVEL": "warning", "AGENTKEEL_STATE_DIR": str(state)}

    async def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        on_line: Callable[[str], object] | None = None,
    ) -> tuple[int, str, str]:
        """Run `argv`; `on_line` sees each line of its output as it comes (and may be a
        coroutine function, awaited before the next line is read)."""
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env or self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.create_task(proc.stderr.read())
        lines: list[str] = []
        async with asyncio.timeout(RUN_S):
            async for raw in proc.stdout:
                line = raw.decode()
                lines.append(line)
                if on_line is not None:
                    said = on_line(line)
                    if asyncio.iscoroutine(said):
                        await said
            code = await proc.wait()
        return code, "".join(lines), (await errors).decode()

    async def python(
        self,
        code: str,
        cwd: Path,
        *,
        env: dict[str, str] | None = None,
        on_line: Callable[[str], object] | None = None,
    ) -> tuple[int, str, str]:
        """Run `code` as a program of its own, as a user saves and runs an example."""
        path = cwd / f"block_{abs(hash(code))}.py"
        path.write_text(code)
        return await self.run([sys.executable, str(path)], cwd=cwd, env=env, on_line=on_line)
