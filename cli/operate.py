"""The operators' commands: `agentkeel status`, `stats`, `trace`, `logs`, `audit` and
`calibrate`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.service import RPCError

from agentkeel.client.agent_client import connect_client
from agentkeel.settings.model import Settings, SettingsError, parse_duration

OPERATOR_COMMANDS = ("status", "stats", "trace", "logs", "audit", "calibrate", "route-classifier")


def add_operator_parsers(sub: Any) -> None:
    status = sub.add_parser(
        "status", help="what the running stack runs: processes, restarts, addresses, workers"
    )
    status.add_argument("--json", action="store_true", help="print JSON")
    stats = sub.add_parser(
        "stats", help="per-layer latency, cache and router figures of recent runs"
    )
    stats.add_argument("--since", default="1h", help="how far back: 90s, 15m, 1h, 2d (default 1h)")
    stats.add_argument("--tenant", help="one tenant's runs only")
    stats.add_argument("--json", action="store_true", help="print JSON")
    trace = sub.add_parser("trace", help="a run's waterfall from its Temporal history")
    trace.add_argument("workflow_id")
    trace.add_argument("--run-id", help="that run of the workflow id (default: the latest)")
    trace.add_argument(
        "--all", action="store_true", help="every run of the workflow id, oldest first"
    )
    trace.add_argument("--width", type=int, default=60, help="columns of the time axis")
    trace.add_argument("--json", action="store_true", help="print the spans as JSON")
    logs = sub.add_parser("logs", help="the local stack's logs (all, or one process's)")
    logs.add_argument("name", nargs="?", help="a process: temporal, worker-cpu, gateway, ...")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines of each log to show")
    audit = sub.add_parser(
        "audit", help="side effects, refusals and approval decisions, newest first"
    )
    audit.add_argument("--tenant", default="default", help="whose ledger (default: default)")
    audit.add_argument("--actor", help="an actor: role:subject, role~name, or a role")
    audit.add_argument(
        "--target",
        help="what an effect changed, as recorded: its identity arguments (account_id=7)",
    )
    audit.add_argument("--since", help="how far back: 90s, 15m, 1h, 2d (default: all)")
    audit.add_argument("--limit", type=int, default=100, help="rows at most (1-1000)")
    audit.add_argument("--json", action="store_true", help="print JSON")
    calibrate = sub.add_parser(
        "calibrate", help="the router threshold for a heavy-model share or an error rate"
    )
    target = calibrate.add_mutually_exclusive_group(required=True)
    target.add_argument("--heavy-share", type=float, help="the most routes the heavy model takes")
    target.add_argument("--error-rate", type=float, help="the most routes kept light wrongly")
    calibrate.add_argument("--since", default="7d", help="how far back (default 7d)")
    calibrate.add_argument("--tenant", help="one tenant's runs only")
    calibrate.add_argument(
        "--basis",
        choices=["reported", "logprobs", "classifier"],
        default="reported",
        help="which confidence to calibrate (AGENTKEEL_ROUTE_CONFIDENCE; default reported)",
    )
    calibrate.add_argument("--json", action="store_true", help="print JSON")
    trainer = sub.add_parser(
        "route-classifier",
        help="train the router's classifier confidence from recorded runs, and compare it",
    )
    trainer.add_argument("file", help="where to write it (AGENTKEEL_ROUTE_CLASSIFIER)")
    trainer.add_argument("--since", default="7d", help="how far back (default 7d)")
    trainer.add_argument("--tenant", help="one tenant's runs only")
    trainer.add_argument("--json", action="store_true", help="print JSON")


async def run_operator(settings: Settings, args: argparse.Namespace) -> int:
    run = {
        "status": _status,
        "stats": _stats,
        "trace": _trace,
        "logs": _logs,
        "audit": _audit,
        "calibrate": _calibrate,
        "route-classifier": _route_classifier,
    }[args.command]
    return await run(settings, args)


async def _calibrate(settings: Settings, args: argparse.Namespace) -> int:
    """0: a threshold meets the target; 1: none does, or nothing to calibrate from."""
    from agentkeel.client.calibration import calibrate, format_calibration, recorded_routes

    if not settings.database_url:
        raise SettingsError("no run records to read: set AGENTKEEL_DATABASE_URL or start the stack")
    for name in ("heavy_share", "error_rate"):
        value = getattr(args, name)
        if value is not None and not 0.0 <= value <= 1.0:
            raise SettingsError(f"--{name.replace('_', '-')}: a fraction from 0 to 1, not {value}")
    since = timedelta(seconds=parse_duration(args.since, "--since"))
    routes, kept = await recorded_routes(
        settings.database_url, since=since, tenant=args.tenant, basis=args.basis
    )
    result = calibrate(routes, heavy_share=args.heavy_share, error_rate=args.error_rate)
    result.kept_uncounted = kept
    print(result.to_json() if args.json else format_calibration(result))
    return 0 if result.threshold is not None else 1


async def _route_classifier(settings: Settings, args: argparse.Namespace) -> int:
    """0: trained and written; 1: too few recorded routes to train from."""
    try:
        from agentkeel.activities.cache.semantic.setup import shared_embedder
        from agentkeel.client import classifier_training as training
    except ImportError as exc:
        raise SettingsError(f"the route classifier needs the semantic extra: {exc}") from None
    if not settings.database_url:
        raise SettingsError("no run records to read: set AGENTKEEL_DATABASE_URL or start the stack")
    since = timedelta(seconds=parse_duration(args.since, "--since"))
    routes = await training.recorded(settings.database_url, since=since, tenant=args.tenant)
    model = str(settings.embedder_model) if settings.embedder_model else None
    embedder = shared_embedder(model, settings.embedder_backend)
    classifier, report = await training.train(routes, embedder)
    if classifier is not None:
        classifier.save(args.file)
    written = args.file if classifier is not None else None
    shown = training.report_json if args.json else training.format_training
    print(shown(report, written))
    return 0 if classifier is not None else 1


async def _stats(settings: Settings, args: argparse.Namespace) -> int:
    from agentkeel.client.stats import format_stats, run_stats
    from agentkeel.settings.connections import redis_client

    if not settings.database_url:
        raise SettingsError("no run records to read: set AGENTKEEL_DATABASE_URL or start the stack")
    since = timedelta(seconds=parse_duration(args.since, "--since"))
    # The Redis the client fast path counts its hits in, if this deployment has one.
    redis = redis_client(settings.redis_url) if settings.redis_url else None
    try:
        stats = await run_stats(
            settings.database_url,
            since=since,
            tenant=args.tenant,
            redis=redis,
            namespace=settings.temporal_namespace,
            task_queue=settings.task_queue,
        )
    finally:
        if redis is not None:
            await redis.aclose()
    print(stats.to_json() if args.json else format_stats(stats))
    return 0


async def _audit(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from agentkeel.cli.audit import audit_entries, entries_json, format_audit
    from agentkeel.schemas.effects import AuditQuery

    if not settings.database_url:
        raise SettingsError("no ledger to read: set AGENTKEEL_DATABASE_URL or start the stack")
    since = None
    if args.since:
        since = datetime.now(UTC) - timedelta(seconds=parse_duration(args.since, "--since"))
    try:
        query = AuditQuery(
            tenant=args.tenant, actor=args.actor, target=args.target, since=since, limit=args.limit
        )
    except ValidationError as exc:
        raise SettingsError(
            f"audit: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}"
        ) from None
    entries = await audit_entries(settings.database_url, query)
    print(entries_json(entries) if args.json else format_audit(entries))
    return 0


async def _trace(settings: Settings, args: argparse.Namespace) -> int:
    """A reused workflow id (a coalesced question asked again, a schedule) has several runs:
    the latest is drawn and the others named; `--all` draws every one, `--run-id` one."""
    from agentkeel.client.trace import format_waterfall, run_waterfall

    client = await connect_client(settings)
    every = args.all and not args.run_id
    runs = [] if args.run_id else await _runs_of(client, args.workflow_id)
    chosen = [r.run_id for r in runs] if every and runs else [args.run_id]
    if not every and len(runs) > 1:
        others = ", ".join(f"{r.run_id} ({_when(r)})" for r in runs[:-1])
        print(
            f"agentkeel trace: {args.workflow_id} has {len(runs)} runs; this is the latest, "
            f"{runs[-1].run_id} ({_when(runs[-1])}); the others: {others}; "
            "`--run-id RUN` draws one, `--all` every one",
            file=sys.stderr,
        )
    waterfalls = []
    for run_id in chosen:
        handle = client.get_workflow_handle(args.workflow_id, run_id=run_id)
        try:
            history = await handle.fetch_history()
        except RPCError as exc:
            print(f"agentkeel trace: {args.workflow_id}: {exc.message}", file=sys.stderr)
            return 1
        waterfalls.append((run_id, run_waterfall(history)))
    if args.json:
        shapes = [dataclasses.asdict(w) | ({"run_id": r} if r else {}) for r, w in waterfalls]
        print(json.dumps(shapes if every else shapes[0], indent=2))
        return 0
    for run_id, waterfall in waterfalls:
        if every:
            print(f"run {run_id}:")
        print(format_waterfall(waterfall, width=args.width))
    return 0


async def _runs_of(client: Any, workflow_id: str) -> list[Any]:
    """Every run of `workflow_id` the server's visibility lists, oldest first."""
    quoted = workflow_id.replace("\\", "\\\\").replace("'", "\\'")
    try:
        runs = [r async for r in client.list_workflows(f"WorkflowId = '{quoted}'")]
    except RPCError:
        return []  # a server without visibility: the latest run alone, as before
    return sorted(runs, key=lambda r: r.start_time)


def _when(run: Any) -> str:
    status = run.status.name.lower() if run.status is not None else "unknown"
    return f"started {run.start_time:%Y-%m-%d %H:%M:%S}, {status}"


async def _status(settings: Settings, args: argparse.Namespace) -> int:
    """0: the stack runs, every process is up and every queue has a worker; 1: not so."""
    from agentkeel.cli.stack.status import format_status, stack_status

    report = await stack_status(settings)
    print(report.to_json() if args.json else format_status(report))
    return 0 if report.healthy else 1


async def _logs(settings: Settings, args: argparse.Namespace) -> int:
    """0: shown; 1: no logs (no stack ran from here); 2: no log of that name."""
    from agentkeel.cli.stack.logs import NoSuchLog, follow, log_files, pick, show

    log_dir = settings.state_dir / "logs"
    files = log_files(log_dir)
    if not files:
        print(
            f"agentkeel logs: no logs in {log_dir}: start the stack with `agentkeel up --detach`",
            file=sys.stderr,
        )
        return 1
    try:
        chosen = pick(files, args.name)
    except NoSuchLog as exc:
        print(f"agentkeel logs: {exc}", file=sys.stderr)
        return 2
    show(chosen, args.lines, sys.stdout)
    if args.follow:
        await follow(chosen, sys.stdout)
    return 0
