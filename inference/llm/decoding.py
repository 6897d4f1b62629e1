"""The LLM policy's model calls: requests with their stable head apart, timed, labels decoded.

Every prompt the policy builds starts with `system_prefix()`; the request carries it as
its `system` part, so a chat engine sends it as the system message and a completions
engine sends the same bytes as before, head first (the prefix cache sees no change).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

from agentkeel.inference.engines.constraints import check_output
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    Engine,
    FinishReason,
    GenerateRequest,
    GenerateResult,
    Usage,
    opened_stream,
)
from agentkeel.inference.llm.confidence import label_confidence
from agentkeel.inference.llm.model_events import model_event, model_span, record_usage
from agentkeel.inference.llm.plan_stream import STEP_SINK, StepReader
from agentkeel.inference.llm.prompts import system_prefix
from agentkeel.inference.llm.stream_pace import PACE
from agentkeel.inference.policy import TokenSink
from agentkeel.inference.usage import count_call
from agentkeel.schemas.route import Tier

LABEL_LOGPROBS = 20
"""Alternatives per position: enough to see the other labels' first tokens."""
LABEL_MAX_TOKENS = 8


def request_of(prompt: str, **fields: Any) -> GenerateRequest:
    """`prompt` as a request whose `system` is the shared head, when the prompt starts with it."""
    head = system_prefix()
    if prompt.startswith(head):
        return GenerateRequest(system=head, prompt=prompt[len(head) :], **fields)
    return GenerateRequest(prompt=prompt, **fields)


async def generate(engine: Engine, tier: Tier, request: GenerateRequest) -> GenerateResult:
    """`engine.generate` as a GenAI span, and on the activity's span an event with what it
    cost."""
    started = time.perf_counter()
    with model_span(engine, tier) as span:
        with _spent_if_cancelled(engine, tier, request, [], span):
            result = await engine.generate(request)
        usage = result.usage
        prompt, output = _counted(engine, tier, request, usage, result.text, span)
        record_usage(span, prompt, output, result.finish_reason)
    model_event(
        engine.name,
        tier,
        prompt_tokens=prompt,
        output_tokens=output,
        finish_reason=result.finish_reason,
        ms=(time.perf_counter() - started) * 1000,
    )
    return result


def _counted(
    engine: Engine,
    tier: Tier,
    request: GenerateRequest,
    usage: Usage | None,
    text: str,
    span: trace.Span,
) -> tuple[int, int]:
    """The call entered in the activity's usage book (`inference.usage`): the server's
    counts, estimated where it gave none (and the span says so)."""
    prompt, output, estimated = count_call(
        tier,
        engine.name,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        prompt_text=request.system + request.prompt,
        completion_text=text,
    )
    if estimated and span.is_recording():
        span.set_attribute("agentkeel.usage.estimated", True)
    return prompt, output


@contextmanager
def _spent_if_cancelled(
    engine: Engine, tier: Tier, request: GenerateRequest, parts: list[str], span: trace.Span
) -> Iterator[None]:
    """A call cancelled midway (a plan started beside a router that turned out sure) has
    still cost its prompt and what it decoded: entered in the book (estimated) before the
    cancel goes on, so usage and budgets count the work thrown away too."""
    try:
        yield
    except asyncio.CancelledError:
        _counted(engine, tier, request, None, "".join(parts), span)
        raise


async def stream(
    engine: Engine, tier: Tier, request: GenerateRequest, sink: TokenSink | None
) -> tuple[list[str], datetime | None]:
    """`engine.stream` as a GenAI span, each piece passed to `sink`: the pieces (one per
    decoded token, as engines stream them) and when the first came."""
    parts: list[str] = []
    first_at: datetime | None = None
    asked_at = datetime.now(UTC)
    usage: Usage | None = None
    with model_span(engine, tier) as span, _spent_if_cancelled(engine, tier, request, parts, span):
        async with opened_stream(engine, request) as deltas:
            async for delta in deltas:
                usage = delta.usage or usage
                if not delta.text:
                    continue
                if first_at is None:
                    first_at = datetime.now(UTC)
                parts.append(delta.text)
                if sink is not None:
                    await sink(delta.text)
        if usage is None:  # one piece per decoded token, as engines stream them
            usage = Usage(completion_tokens=len(parts))
        prompt, output = _counted(engine, tier, request, usage, "".join(parts), span)
        record_usage(span, prompt, output, None)
    model_event(
        engine.name,
        tier,
        prompt_tokens=prompt,
        output_tokens=output,
        ttft_ms=(first_at - asked_at).total_seconds() * 1000 if first_at else None,
    )
    return parts, first_at


def streams_json(engine: Engine) -> bool:
    """Whether `engine` streams a constrained JSON document (`streams_json = True`: the
    OpenAI-compatible and vLLM engines); an engine that does not says nothing, and its
    plans are decoded whole, as always."""
    return bool(getattr(engine, "streams_json", False))


async def generate_plan(
    engine: Engine, tier: Tier, request: GenerateRequest, *, ready: Sequence[str] = ()
) -> GenerateResult:
    """A plan document: decoded whole, or, where the calling activity takes early reads
    (`inference.llm.plan_stream.STEP_SINK`), the engine can, and this planner's plans take
    long enough to come for an early read to start (`stream_pace`), streamed, each complete
    read handed to the sink as soon as the model has written it. The same checked result.
    `ready`: steps the planner was given, started already (a written read may read them)."""
    sink = STEP_SINK.get()
    if sink is None or not streams_json(engine):
        return await generate(engine, tier, request)
    if not PACE.streams(engine, tier.value):  # its plans come whole within the hold
        started = time.perf_counter()
        result = await generate(engine, tier, request)
        PACE.whole(engine, tier.value, time.perf_counter() - started)
        return result
    started = time.perf_counter()
    reader = StepReader(ready=ready)
    parts: list[str] = []
    finish: FinishReason | None = None
    usage: Usage | None = None
    first_text = last_text = 0.0
    with model_span(engine, tier) as span, _spent_if_cancelled(engine, tier, request, parts, span):
        # (The engine checks the whole text after the last piece.)
        async with opened_stream(engine, request) as deltas:
            async for delta in deltas:
                usage = delta.usage or usage
                if delta.text:
                    last_text = time.perf_counter()
                    first_text = first_text or last_text
                    parts.append(delta.text)
                finish = delta.finish_reason or finish
                for call in reader.feed(delta.text):
                    await sink(call)
        if first_text:  # (a stream with no text says nothing of the pace)
            PACE.streamed(
                engine,
                tier.value,
                first_text_s=first_text - started,
                text_span_s=last_text - first_text,
            )
        text = "".join(parts)
        # Without the server's counts: one piece per decoded token, as engines stream them.
        counted = usage or Usage(completion_tokens=len(parts))
        prompt, output = _counted(engine, tier, request, counted, text, span)
        record_usage(span, prompt, output, finish)
    model_event(
        engine.name,
        tier,
        prompt_tokens=prompt,
        output_tokens=output,
        finish_reason=finish,
        ms=(time.perf_counter() - started) * 1000,
    )
    return GenerateResult(
        text=text, finish_reason=finish, parsed=check_output(request.constraint, text, finish)
    )


async def choose(
    engine: Engine, tier: Tier, prompt: str, labels: tuple[str, ...]
) -> tuple[str, float | None]:
    """One label of `labels`, decoded under a choice constraint, and its probability (None
    when the engine gave nothing to measure it by).

    Raises:
        ConstraintViolationError: the engine could not keep to the labels.
    """
    request = request_of(
        prompt,
        max_tokens=LABEL_MAX_TOKENS,
        constraint=ChoiceConstraint(choices=list(labels)),
        logprobs=LABEL_LOGPROBS,
    )
    result = await generate(engine, tier, request)
    # An engine that decoded the label as a JSON document hands it over unwrapped.
    label = result.parsed if isinstance(result.parsed, str) else result.text.strip().strip('"')
    return label, label_confidence(result.logprobs, labels)
