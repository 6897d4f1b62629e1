"""`agentkeel`: run the local stack, ask questions, run workers. Settings: AGENTKEEL_* env vars.

Every subcommand is one entry of `COMMANDS`: what it runs, whether it checks or installs
the served domain first, and whether the command line traces it. `worker`, `gateway` and
`mcp` hand the process over to their own programs (`python -m agentkeel.workers`, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError
from temporalio.service import RPCError

from agentkeel.cli.ask import ask
from agentkeel.cli.migrate import run_migrate
from agentkeel.cli.operate import OPERATOR_COMMANDS, run_operator
from agentkeel.cli.options import InvalidActor
from agentkeel.cli.parser import build_parser
from agentkeel.cli.result import show_result
from agentkeel.cli.scaffold import scaffold_domain
from agentkeel.cli.schedule import run_schedule
from agentkeel.cli.stack.demo import run_demo
from agentkeel.cli.stack.supervisor import (
    StackError,
    describe,
    run_foreground,
    start_detached,
    stop_detached,
)
from agentkeel.cli.target import profile_environ, resolve_target, say_target
from agentkeel.client.agent_client import connect_client
from agentkeel.client.approvals import ApprovalRefused, decide_approval
from agentkeel.client.status_line import StatusLine, stack_starting
from agentkeel.client.watches import format_waiting, waiting_runs
from agentkeel.schemas import errors
from agentkeel.schemas.approvals import ApprovalDecision
from agentkeel.settings.connections import announce_connections
from agentkeel.settings.domain_assembly import check_domain, serve_domain
from agentkeel.settings.event_loop import run as run_loop
from agentkeel.settings.logging import configure_logging
from agentkeel.settings.metrics import forward_core_logs
from agentkeel.settings.model import ENV_PREFIX, Settings, SettingsError, StartupError
from agentkeel.settings.tracing import configure_tracing, flush_tracing


def _target(
    settings: Settings, args: argparse.Namespace, *, stack: bool = True, now: bool = False
) -> Settings:
    """The settings of the Temporal this command acts on (`cli.target`), said on stderr
    when the command connects to it (`now`: at once): a command that refuses its input
    before connecting says that in one line."""
    target = resolve_target(settings, args, profile_environ(args, os.environ), stack=stack)
    said = False

    def say(_: Settings) -> None:
        nonlocal said
        if not said:
            said = True
            say_target(args.command, target)

    if now:
        say(settings)
    else:
        announce_connections(say)
    return target.settings


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
    except ApprovalRefused as exc:
        print(f"agentkeel approve: refused: {exc}", file=sys.stderr)
        if exc.type == errors.APPROVAL_ID_REQUIRED:
            print("agentkeel approve: name it with --approval N", file=sys.stderr)
        return 1
    except RPCError as exc:
        print(f"agentkeel approve: {args.workflow_id}: {exc.message}", file=sys.stderr)
        return 1
    if args.json:
        print(answer.model_dump_json(indent=2))
        return 0
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


def _up(settings: Settings, args: argparse.Namespace) -> int:
    if not args.detach:
        return run_foreground(settings)
    with StatusLine("starting the local stack") as line:
        endpoints = start_detached(settings, on_wait=stack_starting(line))
    if args.json:
        print(endpoints.to_json())
        return 0
    print(f"agentkeel stack is up in the background\n{describe(endpoints)}")
    print("stop it with: agentkeel down")
    return 0


def _down(settings: Settings, args: argparse.Namespace) -> int:
    stopped = stop_detached(settings)
    if args.json:
        print(json.dumps({"stopped": stopped}))
        return 0
    print("agentkeel stack stopped" if stopped else "no agentkeel stack was running")
    return 0


ClientCommand = Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]


def _client(command: ClientCommand, *, on_running_stack: bool = True) -> Runner:
    """A command that talks to Temporal as a client, on the running local stack if any."""

    def run(settings: Settings, args: argparse.Namespace) -> int:
        target = _target(settings, args, stack=on_running_stack)
        return _exit_skipping_teardown(run_loop(command(target, args), settings.event_loop))

    return run


def _operator(settings: Settings, args: argparse.Namespace) -> int:
    target = settings if args.command == "status" else _target(settings, args)
    return _exit_skipping_teardown(run_loop(run_operator(target, args), settings.event_loop))


def _migrate(settings: Settings, args: argparse.Namespace) -> int:
    return _exit_skipping_teardown(run_loop(run_migrate(settings, args), settings.event_loop))


def _demo(settings: Settings, args: argparse.Namespace) -> int:
    return _exit_skipping_teardown(run_loop(run_demo(settings), settings.event_loop))


def _program(module: str, *, on_running_stack: bool) -> Command:
    """Hand this process over to another agentkeel program (`exec`: same pid, signals and
    streams), with the running local stack's addresses in its environment if asked."""

    def run(settings: Settings, args: argparse.Namespace) -> int:
        env = profile_environ(args, os.environ)
        target = _target(settings, args, stack=on_running_stack, now=True)
        for field in ("temporal_address", "temporal_namespace", "redis_url", "database_url"):
            value = getattr(target, field)
            if value is not None and value != getattr(settings, field):
                env[ENV_PREFIX + field.upper()] = str(value)
        argv = [sys.executable, "-m", module, *getattr(args, "program_args", [])]
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, argv, env)

    return Command(run, domain="none", traced=False, hands_over=True)


Runner = Callable[[Settings, argparse.Namespace], int]
OfflineRunner = Callable[[argparse.Namespace], int]
DomainUse = Literal["serve", "check", "none"]


@dataclass(frozen=True)
class Command:
    run: Runner | None
    domain: DomainUse = "serve"
    """`serve`: install it now (its import, roles and tools checked at once); `check`: the
    command installs it itself, with its MCP servers' tools; `none`: not needed."""
    traced: bool = True
    """The command line's own spans; a stack or a program it starts traces itself."""
    hands_over: bool = False
    """Another program takes this process over: it sets up its own logs and domain."""
    offline: OfflineRunner | None = None
    """Instead of `run`, for a command that must work whatever the environment holds
    (`init`): no settings are read."""


def _init(args: argparse.Namespace) -> int:
    return scaffold_domain(args.name, args.dir)


COMMANDS: dict[str, Command] = {
    # Writes a new domain package: needs no settings, no domain, no server.
    "init": Command(None, domain="none", traced=False, offline=_init),
    "up": Command(_up, traced=False),
    "down": Command(_down, domain="none"),
    "migrate": Command(_migrate, domain="check", traced=False),
    "demo": Command(_demo, domain="check", traced=False),
    "ask": Command(_client(ask), domain="check"),
    "result": Command(_client(show_result), domain="check"),
    "approve": Command(_client(_approve)),
    "watches": Command(_client(_watches)),
    "schedule": Command(_client(run_schedule)),
    **{name: Command(_operator) for name in OPERATOR_COMMANDS},
    # Programs of their own: they read their settings and check their domain themselves.
    "worker": _program("agentkeel.workers", on_running_stack=False),
    "gateway": _program("agentkeel.gateway", on_running_stack=True),
    "mcp": _program("agentkeel.gateway.mcp", on_running_stack=True),
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = COMMANDS[args.command]
    if command.offline is not None:
        return command.offline(args)
    assert command.run is not None
    try:
        settings = Settings.from_env(profile_environ(args, os.environ))
        if not command.hands_over:
            configure_logging(settings.log_level, settings.log_format)
            forward_core_logs()  # before any client: Temporal Core's lines join these logs
        if command.domain == "serve":
            serve_domain(settings)
        elif command.domain == "check":
            check_domain(settings)
        if command.traced:
            configure_tracing("agentkeel-cli")
        return command.run(settings, args)
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


if __name__ == "__main__":
    sys.exit(main())
