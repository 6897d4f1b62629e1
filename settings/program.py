"""How every agentkeel program starts: settings read once, logs configured, errors in one
line (`agentkeel NAME: what was wrong`) with exit status 1, Ctrl-C as 130.

The programs (`python -m agentkeel.workers`, `agentkeel.gateway`, `agentkeel.gateway.mcp`)
are separate processes; the `agentkeel` command line hands over to them with `exec`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from agentkeel.settings.errors import SettingsError, StartupError
from agentkeel.settings.logging import configure_logging
from agentkeel.settings.metrics import forward_core_logs
from agentkeel.settings.model import Settings


def run_program(name: str, serve: Callable[[Settings], None]) -> int:
    """Read the settings, configure logging and `serve` until it returns."""
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level, settings.log_format)
        forward_core_logs()  # before any client: Temporal Core's lines join these logs
        serve(settings)
    except (SettingsError, StartupError) as exc:
        print(f"agentkeel {name}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
