"""Steps that take time on purpose: the `wait` built-in and watched (`repeat`) steps.

Both sleep through the injected `sleep` (inside a workflow, a durable timer: a run that
waits for days holds no worker and no slot anywhere) and say what they wait for through
`on_wait`, so the run can show it (`progress.waiting`, current details, `AgentWaiting`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from agentkeel.schemas.errors import INVALID_ARGUMENTS, WATCH_TIMED_OUT
from agentkeel.schemas.plan.model import MAX_WATCH_S, PlanStep
from agentkeel.schemas.progress import Waiting
from agentkeel.schemas.result import StepError, StepOutcome
from agentkeel.schemas.tools import WAIT, WaitArgs
from agentkeel.workflows.dag.resolve import condition_value

Now = Callable[[], datetime]
Sleep = Callable[[timedelta, str], Awaitable[bool]]
"""Sleep; False when cut short because the run continues as new."""
ShowWait = Callable[[Waiting | None], None]
FirstWait = Callable[[], Awaitable[StepError | None]]
"""Asked before a watch first waits: None lets it wait, a `StepError` fails its step."""


class Suspended(Exception):
    """A watch stopped between two runs so that the run can continue as new."""


class StepFailed(Exception):
    """The step itself is wrong at runtime (a `wait` past the longest allowed): it fails
    with `error`, the run goes on."""

    def __init__(self, error: StepError) -> None:
        super().__init__(error.message)
        self.error = error


class WatchTimedOut(Exception):
    """A watch's `until` never held before its timeout: the step ends `timed_out`."""

    def __init__(self, error: StepError, last_output: Any) -> None:
        super().__init__(error.message)
        self.error = error
        self.last_output = last_output


async def run_wait(
    step_id: str,
    args: Mapping[str, Any],
    outcome: StepOutcome,
    *,
    now: Now,
    sleep: Sleep,
    on_wait: ShowWait,
) -> Any:
    """The `wait` step: sleep `seconds`, or until `until`; its output says until when.

    The end is kept in `outcome.next_run_at`: a run that continues as new mid-wait hands
    it on, and the wait ends when it would have (not `seconds` after the new run began).
    """
    wait = WaitArgs.model_validate(args)
    started = outcome.started_at or now()
    until = outcome.next_run_at or (
        wait.until if wait.until is not None else started + timedelta(seconds=wait.seconds or 0)
    )
    if until - started > timedelta(seconds=MAX_WATCH_S):
        message = (
            f"step {step_id}: wait until {until.isoformat()} is more than "
            f"{MAX_WATCH_S / 86400:g} days away"
        )
        raise StepFailed(StepError(type=INVALID_ARGUMENTS, message=message, non_retryable=True))
    if until > now():
        outcome.next_run_at = until
        what = f"until {until.isoformat(timespec='seconds')}"
        on_wait(Waiting(step_id=step_id, tool=WAIT.name, what=what, until=until))
        try:
            slept = await sleep(until - now(), f"wait {what}")
        finally:
            on_wait(None)
        if not slept:
            raise Suspended(step_id)
        outcome.next_run_at = None
    waited = max((now() - started).total_seconds(), 0.0)
    return {"waited_until": until.isoformat(), "waited_s": waited}


async def run_watch(
    step: PlanStep,
    outcome: StepOutcome,
    run_once: Callable[[], Awaitable[Any]],
    *,
    every: timedelta,
    now: Now,
    sleep: Sleep,
    on_wait: ShowWait,
    ran: Callable[[], bool],
    first_wait: FirstWait | None = None,
) -> Any:
    """Run `step` until its `repeat.until` holds; its output is the run that passed.

    `outcome` keeps the watch's state (`runs`, `next_run_at`, `started_at`): a run that
    continues as new hands it on, and the next run picks up at `next_run_at`. `ran` counts
    one run and says whether to stop (raise `Suspended`) for a continue-as-new.
    `first_wait` is asked once, before the watch first waits (after its first reading did
    not pass): a `StepError` it answers fails the step there (a watch over its quota).

    Raises:
        WatchTimedOut: the next run would fall past `started_at + timeout_s`.
        Suspended: the run must continue as new; `outcome.next_run_at` is set.
        StepFailed: `first_wait` refused the watch.
    """
    repeat = step.repeat
    assert repeat is not None and outcome.started_at is not None
    deadline = outcome.started_at + timedelta(seconds=repeat.timeout_s)
    condition = repeat.until
    while True:
        if outcome.next_run_at is not None:
            delay = outcome.next_run_at - now()
            if delay > timedelta(0) and outcome.runs == 1 and first_wait is not None:
                refused = await first_wait()
                if refused is not None:
                    outcome.next_run_at = None
                    raise StepFailed(refused)
            if delay > timedelta(0):
                what = f"{step.tool} until {condition.ref} {_test(condition)}"
                on_wait(
                    Waiting(
                        step_id=step.id,
                        tool=step.tool,
                        what=what,
                        until=outcome.next_run_at,
                        deadline=deadline,
                        runs=outcome.runs,
                    )
                )
                try:
                    slept = await sleep(
                        delay, f"{step.id}: next {step.tool} (run {outcome.runs + 1})"
                    )
                finally:
                    on_wait(None)
                if not slept:
                    raise Suspended(step.id)
            outcome.next_run_at = None
        output = await run_once()
        outcome.runs += 1
        # The latest reading, live in `progress`; an earlier one kept by reference is stale.
        outcome.output, outcome.output_ref = output, None
        value = condition_value(condition, {step.id: output})
        stop = ran()
        if condition.holds(value):
            return output
        next_run = now() + every
        if next_run > deadline:
            message = (
                f"step {step.id}: {condition.unmet(value)} after {outcome.runs} runs "
                f"over {repeat.timeout_s:g} s"
            )
            raise WatchTimedOut(
                StepError(type=WATCH_TIMED_OUT, message=message, non_retryable=True), output
            )
        outcome.next_run_at = next_run
        if stop:
            raise Suspended(step.id)


def _test(condition: Any) -> str:
    if condition.is_ is not None:
        return f"is {condition.is_}"
    return f"in {condition.in_}"
