"""`agentkeel result WORKFLOW_ID`: a finished run's answer, as `ask` prints it (or its JSON).

For a run started elsewhere (the gateway, a service's `AgentClient`, a schedule, an `ask`
that gave up waiting): the answer of the run that finished, without starting another.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError

from agentkeel.cli.ask import EXIT_ANSWERED, EXIT_FAILED, EXIT_TIMED_OUT
from agentkeel.client.agent_client import AgentClient
from agentkeel.client.report import format_result, went_wrong
from agentkeel.schemas.result import AgentResult
from agentkeel.settings.model import Settings

__all__ = ["add_result_parser", "show_result"]


def add_result_parser(sub: Any) -> None:
    result = sub.add_parser("result", help="a finished run's answer, as `ask` prints it")
    result.add_argument("workflow_id")
    result.add_argument("--run-id", help="that run of the workflow id (default: the latest)")
    result.add_argument("--json", action="store_true", help="print the result JSON")


async def show_result(settings: Settings, args: argparse.Namespace) -> int:
    """0: answered; 1: the run failed, or a step did; 3: still running; 1: no such run."""
    client = await AgentClient.connect(settings)
    try:
        return await _show(client, args)
    finally:
        await client.close()


async def _show(client: AgentClient, args: argparse.Namespace) -> int:
    name = args.workflow_id
    try:
        described = await client.temporal.get_workflow_handle(name, run_id=args.run_id).describe()
    except RPCError as exc:
        print(f"agentkeel result: {name}: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    if described.status == WorkflowExecutionStatus.RUNNING:
        print(
            f"agentkeel result: run {name} ({described.run_id}) has not finished: "
            "it may wait on an approval, a watch or a timer (`agentkeel watches`)",
            file=sys.stderr,
        )
        return EXIT_TIMED_OUT
    handle = client.temporal.get_workflow_handle(
        name, run_id=described.run_id, result_type=AgentResult
    )
    try:
        result = await client.resolve_outputs(await handle.result())
    except WorkflowFailureError as exc:
        print(f"agentkeel result: the run failed: {exc.cause}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(format_result(result, run_started=described.start_time))
    return EXIT_FAILED if went_wrong(result) else EXIT_ANSWERED
