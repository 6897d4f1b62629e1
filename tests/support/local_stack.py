"""A whole local stack (embedded Postgres and Redis, dev server, carrier, workers as child
processes), as a fixture."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentkeel.cli.stack.local import LocalStack, StackEndpoints, embedded_settings
from agentkeel.settings.model import Settings
from agentkeel.settings.ports import free_port_pair


@pytest.fixture
async def running(stack_dir: Path) -> AsyncIterator[tuple[Settings, StackEndpoints]]:
    """A whole local stack (embedded Postgres and Redis, dev server, carrier, workers)."""
    settings = embedded_settings(
        stack_dir,
        task_queue=f"faults-{os.getpid()}",
        # The CPU worker's metrics here, the inference worker's at the next port.
        metrics_address=f"127.0.0.1:{free_port_pair()}",
    )
    stack = LocalStack(settings, start_workers=True)
    endpoints = await stack.start()
    try:
        yield settings, endpoints
    finally:
        await stack.stop()
