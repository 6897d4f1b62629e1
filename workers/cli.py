"""`agentkeel`: run the local stack, ask questions, run workers. Settings: AGENTKEEL_* env vars."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
from collections.abc import Sequence

from pydantic import ValidationError
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError

from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.workers.cli_ask import ask
from agentkeel.workers.cli_init import scaffold_domain
from agentkeel.workers.cli_operate import OPERATOR_COMMANDS, add_operator_parsers, run_operator
from agentkeel.workers.cli_options import InvalidActor, add_actor_options
from agentkeel.workers.cli_schedule import add_schedule_parser, run_schedule
from agentkeel.workers.client.agent_client import connect_client
from agentkeel.workers.client.approvals import NothingAwaiting, decide_approval
from agentkeel.workers.client.status_line import StatusLine, stack_starting
from agentkeel.workers.client.watches import format_waiting, waiting_runs
from agentkeel.workers.domain_assembly import check_domain, serve_domain
from agentkeel.workers.event_loop import run as run_loop
from agentkeel.workers.logging import configure_logging
from agentkeel.workers.settings import Settings, SettingsError, StartupError
from agentkeel.workers.stack.demo import run_demo
from agentkeel.workers.stack.supervisor import (
    StackError,
    read_endpoints,
    run_foreground,
    start_detached,
    stop_detached,
)
from agentkeel.workers.tracing import configure_tracing, flush_tracing


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentkeel", description=__doc__)
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
        help="decide only if request N is the one pending (see the progress query)",
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
    worker.add_argument("kind", choices=["cpu", "inference"])
    return parser


def _version() -> str:
    try:
        return importlib.metadata.version("agentkeel")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def with_running_stack(settings: Settings) -> Settings:
    """Point a client at the stack `up` started from this state directory, if there is one."""
    endpoints = read_endpoints(settings)
    if endpoints is None:
        return settings
    return settings.model_copy(
        update={
            "temporal_address": endpoints.temporal_address,
            "redis_url": settings.redis_url or endpoints.redis_url,
            "database_url": settings.database_url or endpoints.database_url,
        }
    )


async def _approve(settings: Settings, args: argparse.Namespace) -> int:
    decision = ApprovalDecision(
        approved=not args.reject,
        approver=args.approver,
        reason=args.reason,
        approval_id=args.approval,
    )
    temporal = await connect_client(settings)
    try:
        answer = await decide_approval(temporal, args.workflow_id, decision)
    except WorkflowUpdateFailedError as exc:
        print(f"agentkeel approve: refused: {exc.cause}", file=sys.stderr)
        return 1
    except NothingAwaiting as exc:
        print(f"agentkeel approve: {exc}", file=sys.stderr)
        return 1
    except RPCError as exc:
        print(f"agentkeel approve: {args.workflow_id}: {exc.message}", file=sys.stderr)
        return 1
    verdict = "approved" if answer.approved else "rejected"
    what = f"approval {answer.approval_id}: {answer.tool} {answer.call_id}"
    print(f"{what} {verdict} by {answer.approver}")
    return 0


async def _watches(settings: Settings, args: argparse.Namespace) -> int:
    temporal = await connect_client(settings)
    try:
        runs = await waiting_runs(temporal)
    except RPCError as exc:
        print(f"agentkeel watches: {exc.message}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([r.as_json() for r in runs], indent=2))
    else:
        print(format_waiting(runs))
    return 0


def _exit_skipping_teardown(code: int) -> int:
    """Leave a short-lived client process without interpreter teardown.

    The Temporal client's Rust runtime threads can outlive the event loop and abort
    CPython's finalization ("PyGILState_Release ... finalizing", temporalio/sdk-python#300),
    turning a successful `ask` into a crash. Everything is flushed; nothing else is pending.
    """
    flush_tracing()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "init":
        return scaffold_domain(args.name, args.dir)
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level, settings.log_format)
        if args.command in ("worker", "gateway", "mcp", "ask", "demo"):
            # Checked at once; these install it themselves, with its MCP servers' tools
            # (whose catalog version keys the cache a client's fast path reads).
            check_domain(settings)
        elif args.command != "down":
            serve_domain(settings)  # its import, roles and tools are checked at once
        if args.command not in (
            "up",
            "demo",
            "worker",
            "gateway",
            "mcp",
        ):  # (their workers trace themselves)
            configure_tracing("agentkeel-cli")
        if args.command == "up":
            if not args.detach:
                return run_foreground(settings)
            from agentkeel.workers.stack.supervisor import describe

            with StatusLine("starting the local stack") as line:
                endpoints = start_detached(settings, on_wait=stack_starting(line))
            print(f"agentkeel stack is up in the background\n{describe(endpoints)}")
            print("stop it with: agentkeel down")
            return 0
        if args.command == "down":
            stopped = stop_detached(settings)
            print("agentkeel stack stopped" if stopped else "no agentkeel stack was running")
            return 0
        if args.command in OPERATOR_COMMANDS:
            running = settings if args.command == "status" else with_running_stack(settings)
            return _exit_skipping_teardown(
                run_loop(run_operator(running, args), settings.event_loop)
            )
        if args.command == "ask":
            return _exit_skipping_teardown(
                run_loop(ask(with_running_stack(settings), args), settings.event_loop)
            )
        if args.command == "approve":
            return _exit_skipping_teardown(
                run_loop(_approve(with_running_stack(settings), args), settings.event_loop)
            )
        if args.command == "watches":
            return _exit_skipping_teardown(
                run_loop(_watches(with_running_stack(settings), args), settings.event_loop)
            )
        if args.command == "schedule":
            return _exit_skipping_teardown(
                run_loop(run_schedule(with_running_stack(settings), args), settings.event_loop)
            )
        if args.command == "demo":
            return _exit_skipping_teardown(run_loop(run_demo(settings), settings.event_loop))
        if args.command == "gateway":
            from agentkeel.workers.gateway.server import serve_gateway

            run_loop(serve_gateway(with_running_stack(settings)), settings.event_loop)
            return 0
        if args.command == "mcp":
            from agentkeel.workers.mcp_server.stdio import serve_stdio

            run_loop(serve_stdio(with_running_stack(settings)), settings.event_loop)
            return 0
        if args.command == "worker":
            from agentkeel.workers.entry import run_worker

            run_worker(args.kind, settings)
            return 0
    except (StackError, SettingsError, StartupError) as exc:
        print(f"agentkeel {args.command}: {exc}", file=sys.stderr)
        return 1
    except ValidationError as exc:
        print(f"agentkeel {args.command}: invalid input: {exc}", file=sys.stderr)
        return 2
    except InvalidActor as exc:
        print(f"agentkeel {args.command}: invalid actor: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
