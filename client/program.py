"""`run_program`: run a short-lived client program and leave it without a crash at exit.

A process that only uses a Temporal client can abort in CPython's finalization, after all
its work is done, with "Fatal Python error: PyGILState_Release: thread state ... must be
current when releasing" (exit status -6): the Temporal client's Rust runtime threads
outlive the event loop (temporalio/sdk-python#300, open upstream). agentkeel's own CLI
leaves the same way. A long-lived service, whose process does not end after each use, is
not affected.
"""

from __future__ import annotations

import asyncio
import os
import sys
import traceback
from collections.abc import Coroutine
from typing import Any, NoReturn

__all__ = ["run_program"]


def run_program(main: Coroutine[Any, Any, Any]) -> NoReturn:
    """`asyncio.run(main)`, then flush stdout and stderr and exit without interpreter
    teardown: status 0, 1 after printing the traceback of an exception `main` raised, or
    130 on Ctrl-C. Close what `main` opened (`await client.close()`) inside it."""
    code = 0
    try:
        asyncio.run(main)
    except KeyboardInterrupt:
        code = 130
    except Exception:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
