"""`agentkeel schedule add|list|pause|unpause|delete`: recurring questions on the CLI."""

from __future__ import annotations

import argparse
import json
import sys

from pydantic import ValidationError
from temporalio.service import RPCError

from agentkeel.cli.options import actor_of, add_actor_options
from agentkeel.client.agent_client import connect_client
from agentkeel.client.schedule_timing import ScheduleError, Timing
from agentkeel.client.schedules import (
    WORKFLOW_ID_PREFIX,
    create_schedule,
    delete_schedule,
    format_schedules,
    list_schedules,
    pause_schedule,
    scheduled_request,
    unpause_schedule,
)
from agentkeel.schemas.errors import describe_validation
from agentkeel.settings.model import Settings


def add_schedule_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    schedule = sub.add_parser(
        "schedule", help="recurring questions: Temporal Schedules that start AgentWorkflow"
    )
    actions = schedule.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="ask QUESTION every DURATION or at cron times")
    add.add_argument("question")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--every", metavar="DURATION", help="30s, 15m, 1h, 1d, 1h30m, ...")
    when.add_argument("--cron", metavar="EXPR", help='a cron expression, e.g. "0 9 * * 1-5" (UTC)')
    add.add_argument(
        "--id", dest="schedule_id", metavar="ID", help="default: a slug of the question + hash"
    )
    add.add_argument("--tenant", default="default")
    add_actor_options(add)
    add.add_argument("--paused", action="store_true", help="create it paused")
    add.add_argument("--json", action="store_true", help="print JSON")
    add.add_argument(
        "--allow-effects",
        action="store_true",
        help="its runs may make side effects (read-only otherwise; an approver role or system)",
    )
    listing = actions.add_parser("list", help="the schedules that start AgentWorkflow")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    pause = actions.add_parser("pause", help="start no run until unpaused")
    pause.add_argument("schedule_id", metavar="ID")
    pause.add_argument("--note", help="why (shown in the Web UI)")
    unpause = actions.add_parser("unpause", help="start runs again")
    unpause.add_argument("schedule_id", metavar="ID")
    delete = actions.add_parser("delete", help="delete the schedule (its runs finish)")
    delete.add_argument("schedule_id", metavar="ID")
    for done in (pause, unpause, delete):
        done.add_argument("--json", action="store_true", help="print JSON")


async def run_schedule(settings: Settings, args: argparse.Namespace) -> int:
    """`agentkeel schedule ACTION`: any refusal is one line on stderr and exit status 2."""
    try:
        if args.action == "add":
            await _add_schedule(settings, args)
            return 0
        temporal = await connect_client(settings)
        if args.action == "list":
            schedules = await list_schedules(temporal)
            if args.json:
                print(json.dumps([s.to_json() for s in schedules], indent=2))
            else:
                print(format_schedules(schedules))
        elif args.action == "pause":
            await pause_schedule(temporal, args.schedule_id, args.note)
            _done(args, "paused")
        elif args.action == "unpause":
            await unpause_schedule(temporal, args.schedule_id)
            _done(args, "unpaused")
        else:
            await delete_schedule(temporal, args.schedule_id)
            _done(args, "deleted")
    except ScheduleError as exc:
        print(f"agentkeel schedule {args.action}: {exc}", file=sys.stderr)
        return 2
    except RPCError as exc:
        print(f"agentkeel schedule {args.action}: Temporal refused: {exc.message}", file=sys.stderr)
        return 2
    return 0


async def _add_schedule(settings: Settings, args: argparse.Namespace) -> None:
    # Everything is checked before connecting: a refused add creates nothing.
    timing = Timing.parse(every=args.every, cron=args.cron)
    try:
        actor = actor_of(args)
    except ValidationError as exc:
        raise ScheduleError(f"invalid actor: {describe_validation(exc)}") from None
    request = scheduled_request(
        args.question, tenant=args.tenant, actor=actor, effects=args.allow_effects
    )
    temporal = await connect_client(settings)
    schedule_id = await create_schedule(
        temporal,
        request,
        timing,
        task_queue=settings.task_queue,
        schedule_id=args.schedule_id,
        paused=args.paused,
        lanes=settings.priority_lanes,
    )
    paused = ", paused" if args.paused else ""
    runs = f"{WORKFLOW_ID_PREFIX}{schedule_id}-<time>"
    if args.json:
        created = {"schedule_id": schedule_id, "when": timing.describe(), "paused": args.paused}
        print(json.dumps({**created, "workflow_id_prefix": f"{WORKFLOW_ID_PREFIX}{schedule_id}-"}))
        return
    print(f"schedule {schedule_id}: {timing.describe()}{paused} (runs are {runs})")


def _done(args: argparse.Namespace, what: str) -> None:
    if args.json:
        print(json.dumps({"schedule_id": args.schedule_id, "state": what}))
    else:
        print(f"schedule {args.schedule_id} {what}")
