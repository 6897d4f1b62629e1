"""`python -m agentkeel.workers cpu|inference`: one worker process (`agentkeel worker KIND`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agentkeel.settings.program import run_program
from agentkeel.workers.entry import run_worker


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentkeel worker", description=__doc__)
    parser.add_argument("kind", choices=["cpu", "inference"])
    kind = parser.parse_args(argv).kind
    return run_program("worker", lambda settings: run_worker(kind, settings))


if __name__ == "__main__":
    sys.exit(main())
