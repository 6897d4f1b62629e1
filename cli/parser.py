"""The `agentkeel` command line's arguments: one subcommand per entry of `cli.main.COMMANDS`."""

from __future__ import annotations

import argparse
import importlib.metadata

from agentkeel.cli.operate import add_operator_parsers
from agentkeel.cli.options import add_actor_options
from agentkeel.cli.schedule import add_schedule_parser

DESCRIPTION = "run the local stack, ask questions, run workers. Settings: AGENTKEEL_* env vars."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentkeel", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"agentkeel {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up", help="start Temporal, Postgres, Redis, the domain's stand-ins and workers"
    )
    up.add_argument("--detach", action="store_true", help="run in the background")
    sub.add_parser("down", help="stop a stack started with `up --detach` or `demo`")
    ask = sub.add_parser("ask", help="run one question through AgentWorkflow")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print the result JSON")
    ask.add_argument("--tenant", default="default")
    ask.add_argument("--conversation-id")
    ask.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    ask.add_argument(
        "--no-coalesce",
        action="store_true",
        help="always start a run of its own, even if the same question is being answered",
    )
    add_actor_options(ask)
    ask.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="give up waiting after this long (exit status 3; the run goes on)",
    )
    ask.add_argument("--request-id", help="your id for this request: side effects happen once")
    ask.add_argument(
        "--watch-every",
        type=float,
        metavar="SECONDS",
        help="how often a watch ('tell me when order N ships') looks again (default: plan's)",
    )
    watches = sub.add_parser("watches", help="list the runs waiting on a timer or a watch")
    watches.add_argument("--json", action="store_true", help="print JSON")
    approve = sub.add_parser("approve", help="approve (or --reject) a run's pending side effect")
    approve.add_argument("workflow_id")
    approve.add_argument("--reject", action="store_true", help="reject instead of approve")
    approve.add_argument("--as", dest="approver", required=True, metavar="NAME")
    approve.add_argument("--reason", default="")
    approve.add_argument(
        "--approval",
        type=int,
        metavar="N",
        help="the approval decided (required): the run's pending approval_id, which "
        "`agentkeel approve WORKFLOW_ID --as NAME` alone names",
    )
    add_operator_parsers(sub)
    add_schedule_parser(sub)
    sub.add_parser("demo", help="start the stack and run sample questions")
    sub.add_parser("gateway", help="serve the HTTP/SSE gateway at AGENTKEEL_GATEWAY_ADDRESS")
    sub.add_parser("mcp", help="serve agentkeel's MCP tools over stdio (for MCP clients)")
    init = sub.add_parser("init", help="scaffold a domain package of your own")
    init.add_argument("name", help="the package (and domain) name: lower-case letters, _")
    init.add_argument("--dir", default=".", help="where to create it (default: here)")
    worker = sub.add_parser("worker", help="run one worker process")
    worker.add_argument("program_args", choices=["cpu", "inference"], metavar="kind", nargs=1)
    return parser


def _version() -> str:
    try:
        return importlib.metadata.version("agentkeel")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
