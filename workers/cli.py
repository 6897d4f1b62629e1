"""`agentkeel`: run the local stack, ask questions, run workers. Settings: AGENTKEEL_* env vars."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from datetime import timedelta

from pydantic import ValidationError
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.service import RPCError

from schemas.approvals import ApprovalDecision
from schemas.request import AgentRequest, RunOptions
from workers.cli_options import actor_of, add_actor_options
from workers.cli_schedule import add_schedule_parser, run_schedule
from workers.client.agent_client import (
    AgentClient,
    NothingAwaiting,
    connect_client,
    decide_approval,
)
from workers.client.report import StreamedAnswer, format_result
from workers.client.watches import format_waiting, waiting_runs
from workers.logging import configure_logging
from workers.settings import Settings, SettingsError, StartupError, parse_duration
from workers.stack.demo import run_demo
from workers.stack.supervisor import (
    StackError,
    read_endpoints,
    run_foreground,
    start_detached,
    stop_detached,
)
from workers.tracing import configure_tracing, flush_tracing


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentkeel", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start Temporal, Postgres, Redis, carrier service and workers")
    up.add_argument("--detach", action="store_true", help="run in the background")
    sub.add_parser("down", help="stop a stack started with `up --detach` or `demo`")
    status = sub.add_parser(
        "status", help="what the running stack runs: processes, restarts, addresses, workers"
    )
    status.add_argument("--json", action="store_true", help="print JSON")
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
    stats = sub.add_parser(
        "stats", help="per-layer latency, cache and router figures of recent runs"
    )
    stats.add_argument("--since", default="1h", help="how far back: 90s, 15m, 1h, 2d (default 1h)")
    stats.add_argument("--tenant", help="one tenant's runs only")
    stats.add_argument("--json", action="store_true", help="print JSON")
    trace = sub.add_parser("trace", help="a run's waterfall from its Temporal history")
    trace.add_argument("workflow_id")
    trace.add_argument("--run-id", help="that run of the workflow id (default: the latest)")
    trace.add_argument("--width", type=int, default=60, help="columns of the time axis")
    add_schedule_parser(sub)
    sub.add_parser("demo", help="start the stack and run sample questions")
    worker = sub.add_parser("worker", help="run one worker process")
    worker.add_argument("kind", choices=["cpu", "inference"])
    return parser


def with_running_stack(settings: Settings) -> Settings:
    """Point a client at the stack `up` started from this state directory, if there is one."""
    endpoints = read_endpoints(settings)
    if endpoints is None:
        return settings
    return dataclasses.replace(
        settings,
        temporal_address=endpoints.temporal_address,
        redis_url=settings.redis_url or endpoints.redis_url,
        database_url=settings.database_url or endpoints.database_url,
    )


async def _ask(settings: Settings, args: argparse.Namespace) -> int:
    request = AgentRequest(
        question=args.question,
        tenant=args.tenant,
        conversation_id=args.conversation_id,
        actor=actor_of(args),
        request_id=args.request_id,
        options=RunOptions(use_cache=not args.no_cache, watch_every_s=args.watch_every),
    )
    client = await AgentClient.connect(settings)
    coalesce = not args.no_coalesce
    # --json prints the result alone, so it streams nothing.
    streamed = None if args.json else StreamedAnswer(sys.stdout)
    try:
        if streamed is None:
            result = await client.ask(request, coalesce=coalesce)
        else:
            result = await client.ask_streaming(
                request, on_event=streamed.on_event, coalesce=coalesce
            )
    except WorkflowFailureError as exc:
        if streamed is not None:
            streamed.close(None)
        print(f"agentkeel ask: the run failed: {exc.cause}", file=sys.stderr)
        return 1
    finally:
        await client.close()
    if streamed is None:
        print(result.model_dump_json(indent=2))
    else:
        print(format_result(result, answer_shown=streamed.close(result.answer)))
    return 0


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


async def _stats(settings: Settings, args: argparse.Namespace) -> int:
    from workers.client.stats import format_stats, run_stats

    if not settings.database_url:
        raise SettingsError("no run records to read: set AGENTKEEL_DATABASE_URL or start the stack")
    since = timedelta(seconds=parse_duration(args.since, "--since"))
    stats = await run_stats(settings.database_url, since=since, tenant=args.tenant)
    print(stats.to_json() if args.json else format_stats(stats))
    return 0


async def _trace(settings: Settings, args: argparse.Namespace) -> int:
    from workers.client.trace import format_waterfall, run_waterfall

    client = await connect_client(settings)
    handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
    try:
        history = await handle.fetch_history()
    except RPCError as exc:
        print(f"agentkeel trace: {args.workflow_id}: {exc.message}", file=sys.stderr)
        return 1
    print(format_waterfall(run_waterfall(history), width=args.width))
    return 0


async def _status(settings: Settings, args: argparse.Namespace) -> int:
    """0: the stack runs, every process is up and every queue has a worker; 1: not so."""
    from workers.stack.status import format_status, stack_status

    report = await stack_status(settings)
    print(report.to_json() if args.json else format_status(report))
    return 0 if report.healthy else 1


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
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level, settings.log_format)
        if args.command not in ("up", "demo", "worker"):  # (their workers trace themselves)
            configure_tracing("agentkeel-cli")
        if args.command == "up":
            if not args.detach:
                return run_foreground(settings)
            from workers.stack.supervisor import describe

            print(f"agentkeel stack is up in the background\n{describe(start_detached(settings))}")
            print("stop it with: agentkeel down")
            return 0
        if args.command == "down":
            stopped = stop_detached(settings)
            print("agentkeel stack stopped" if stopped else "no agentkeel stack was running")
            return 0
        if args.command == "stats":
            return _exit_skipping_teardown(asyncio.run(_stats(with_running_stack(settings), args)))
        if args.command == "trace":
            return _exit_skipping_teardown(asyncio.run(_trace(with_running_stack(settings), args)))
        if args.command == "status":
            return _exit_skipping_teardown(asyncio.run(_status(settings, args)))
        if args.command == "ask":
            return _exit_skipping_teardown(asyncio.run(_ask(with_running_stack(settings), args)))
        if args.command == "approve":
            return _exit_skipping_teardown(
                asyncio.run(_approve(with_running_stack(settings), args))
            )
        if args.command == "watches":
            return _exit_skipping_teardown(
                asyncio.run(_watches(with_running_stack(settings), args))
            )
        if args.command == "schedule":
            return _exit_skipping_teardown(
                asyncio.run(run_schedule(with_running_stack(settings), args))
            )
        if args.command == "demo":
            return _exit_skipping_teardown(asyncio.run(run_demo(settings)))
        if args.command == "worker":
            from workers.worker import run_cpu_worker, run_inference_worker

            runner = run_cpu_worker if args.kind == "cpu" else run_inference_worker
            asyncio.run(runner(settings))
            return 0
    except (StackError, SettingsError, StartupError) as exc:
        print(f"agentkeel {args.command}: {exc}", file=sys.stderr)
        return 1
    except ValidationError as exc:
        print(f"agentkeel {args.command}: invalid input: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
