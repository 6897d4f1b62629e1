"""`agentkeel ask`: one question through `AgentWorkflow`, streamed to the terminal."""

from __future__ import annotations

import argparse
import asyncio
import sys

from temporalio.client import WorkflowFailureError

from agentkeel.cli.options import actor_of
from agentkeel.client.agent_client import AgentClient
from agentkeel.client.budgets import BudgetExhaustedError
from agentkeel.client.report import StreamedAnswer, format_result, went_wrong
from agentkeel.client.status_line import StatusLine, follow_progress
from agentkeel.schemas.request import AgentRequest, RunOptions
from agentkeel.schemas.tokens import TokenEvent
from agentkeel.settings.model import Settings

EXIT_ANSWERED, EXIT_FAILED, EXIT_INVALID, EXIT_TIMED_OUT = 0, 1, 2, 3
"""`agentkeel` exit statuses: answered; a failed run, a failed step or a stack error;
invalid input; no answer in time."""


async def ask(settings: Settings, args: argparse.Namespace) -> int:
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
    line = StatusLine("checking the cache")
    following: list[asyncio.Task[None]] = []
    started_ids: list[str] = []

    def started(workflow_id: str) -> None:
        started_ids.append(workflow_id)
        line.update(f"started {workflow_id}")
        following.append(asyncio.create_task(follow_progress(client, workflow_id, line)))

    def on_event(event: TokenEvent) -> None:
        line.stop()  # the answer takes the terminal from here
        if streamed is not None:
            streamed.on_event(event)

    try:
        line.start()
        async with asyncio.timeout(args.timeout):
            if streamed is None:
                result = await client.ask(request, coalesce=coalesce, on_started=started)
            else:
                result = await client.ask_streaming(
                    request, on_event=on_event, coalesce=coalesce, on_started=started
                )
    except WorkflowFailureError as exc:
        if streamed is not None:
            streamed.close(None)
        print(f"agentkeel ask: the run failed: {exc.cause}", file=sys.stderr)
        return EXIT_FAILED
    except BudgetExhaustedError as exc:
        line.stop()
        print(f"agentkeel ask: no run started: {exc.type}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except TimeoutError:
        if streamed is not None:
            streamed.close(None)
        if started_ids:
            # It started: it is not lost, only not done (or nobody serves its queue).
            print(
                f"agentkeel ask: no answer within {args.timeout:g} s; run {started_ids[-1]} "
                "goes on: it waits on a watch, a timer or an approval (`agentkeel watches`), "
                f"or no worker polls task queue {settings.task_queue!r} (`agentkeel status`)",
                file=sys.stderr,
            )
        else:
            print(
                f"agentkeel ask: no answer within {args.timeout:g} s from Temporal at "
                f"{settings.temporal_address}: is a worker polling task queue "
                f"{settings.task_queue!r}? (`agentkeel status` shows it); the run, if it "
                "started, goes on",
                file=sys.stderr,
            )
        return EXIT_TIMED_OUT
    finally:
        for task in following:
            task.cancel()
        line.stop()
        await client.close()
    if streamed is None:
        print(result.model_dump_json(indent=2))
    else:
        print(format_result(result, answer_shown=streamed.close(result.answer)))
    return EXIT_FAILED if went_wrong(result) else EXIT_ANSWERED
