"""The `agentkeel` command line's arguments: one subcommand per entry of `cli.main.COMMANDS`."""

from __future__ import annotations

import argparse
import importlib.metadata
from typing import Any

from agentkeel.cli.migrate import add_migrate_parser
from agentkeel.cli.operate import add_operator_parsers
from agentkeel.cli.options import add_actor_options
from agentkeel.cli.result import add_result_parser
from agentkeel.cli.schedule import add_schedule_parser
from agentkeel.cli.target import add_target_options

DESCRIPTION = "run the local stack, ask questions, run workers. Settings: AGENTKEEL_* env vars."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentkeel", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"agentkeel {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up", help="start Temporal, Postgres, Redis, the domain's stand-ins and workers"
    )
    up.add_argument("--detach", action="store_true", help="run in the background")
    up.add_argument("--json", action="store_true", help="with --detach: print the endpoints JSON")
    down = sub.add_parser("down", help="stop a stack started with `up --detach` or `demo`")
    down.add_argument("--json", action="store_true", help="print JSON")
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
    approve.add_argument("--json", action="store_true", help="print the decision JSON")
    add_result_parser(sub)
    add_migrate_parser(sub)
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
    for name, command in sub.choices.items():
        _add_common_options(command, connects=name not in WITHOUT_TARGET)
    return parser


WITHOUT_TARGET = frozenset({"init", "up", "down", "demo", "status", "logs", "migrate"})
"""Commands without `--address`, `--namespace`, `--profile`: they reach no Temporal, or the
local stack's own (`up` and `demo` start it, `status` and `logs` describe it)."""


class _Output(argparse.Action):
    """`-o json` / `-o text`: the same as `--json` (or its absence)."""

    def __call__(
        self, parser: Any, namespace: argparse.Namespace, values: Any, _: Any = None
    ) -> None:
        namespace.json = values == "json"


def _add_common_options(parser: argparse.ArgumentParser, *, connects: bool) -> None:
    """On `parser` and its own subcommands (`schedule list`, ...): the Temporal options
    (`cli.target`), and `-o {text,json}` beside each `--json` (every command that prints
    has one)."""
    children = [
        choice
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action.choices.values()
    ]
    for child in children:
        _add_common_options(child, connects=connects)
    if children:
        return  # the options go after the subcommand's own name
    if connects:
        add_target_options(parser)
    if "--json" in parser._option_string_actions:
        parser.add_argument(
            "-o", "--output", choices=("text", "json"), action=_Output, dest="json",
            help="text (the default) or json, as --json",
        )  # fmt: skip


def _version() -> str:
    try:
        return importlib.metadata.version("agentkeel")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
