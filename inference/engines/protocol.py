"""What a policy needs from a language model, apart from how the model is served.

Request and result types plus the `Engine` protocol; the concrete engines
(`VllmEngine` in-process, `OpenAICompatEngine` over HTTP) live beside this module and
are chosen by settings in `workers/`. Modelled on vLLM's split of
`vllm/engine/protocol.py` (`EngineClient`) from its serving code.

A request carries its stable head (`system`) apart from the rest (`prompt`). An engine
speaking the completions API sends `system + prompt` as one text, byte for byte what a
base model was always sent; one speaking the chat API (`PromptApi`) sends them as a system
and a user message, and the model's own chat template turns them into tokens. Either way
the policy owns the words, so the stable prefix that prefix caching needs is decided in
one place.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentkeel.schemas.choices import PromptApi as PromptApi


class JsonSchemaConstraint(BaseModel):
    """Decode only text that is a JSON document valid against `json_schema`."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["json"] = "json"
    json_schema: dict[str, Any]
    """A JSON Schema (draft 2020-12 subset the backend supports; `Model.model_json_schema()`)."""


class ChoiceConstraint(BaseModel):
    """Decode exactly one of `choices` (classification, yes/no, intent names)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["choice"] = "choice"
    choices: list[str] = Field(min_length=1)


Constraint = Annotated[JsonSchemaConstraint | ChoiceConstraint, Field(discriminator="kind")]


class GenerateRequest(BaseModel):
    """One completion. Sampling defaults are greedy: policies want repeatable decisions."""

    model_config = ConfigDict(frozen=True)

    prompt: str
    """The request's own text (conversation, tool results, task); the user message in chat."""
    system: str = ""
    """The stable head every request shares (role, catalog, rules): the system message in
    chat, the text before `prompt` in completions."""
    max_tokens: int = Field(default=256, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    stop: list[str] = Field(default_factory=list)
    seed: int | None = None
    constraint: Constraint | None = None
    logprobs: int | None = Field(default=None, ge=0, le=20)
    """Per generated token: its log-probability and the `logprobs` most likely
    alternatives (0: the chosen token only). None: no logprobs (cheaper)."""
    request_id: str | None = None
    """Engine-side id for logs and aborts; a fresh one when None."""


class TokenLogprob(BaseModel):
    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)
    """The most likely tokens at this position (the chosen one included) and their logprobs."""


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


FinishReason = Literal["stop", "length", "abort", "error"]


class GenerateResult(BaseModel):
    text: str
    finish_reason: FinishReason | None = None
    logprobs: list[TokenLogprob] | None = None
    usage: Usage = Field(default_factory=Usage)
    parsed: Any = None
    """For a JSON constraint: the decoded document (already validated); else None."""


class TokenDelta(BaseModel):
    """A piece of a streamed completion: new text since the previous delta."""

    text: str
    logprobs: list[TokenLogprob] = Field(default_factory=list)
    finish_reason: FinishReason | None = None
    """Set on the last delta of text only."""
    usage: Usage | None = None
    """The whole completion's token counts, on a closing delta after the last one of text
    (its own `text` empty), as OpenAI's streams send them last; None on every other delta,
    and no closing delta where the server reports no counts."""


class EngineError(Exception):
    """Base class of the errors an engine raises on purpose."""


class EngineUnavailableError(EngineError):
    """The model cannot be reached or loaded (server down, wrong URL, model not served).

    Raised by `start()` so a worker fails at start rather than leaving workflows stuck.
    """


class EngineRequestError(EngineError):
    """The engine refused this request (bad parameters, prompt too long). Not retryable."""


class ConstraintViolationError(EngineError):
    """The output does not satisfy the request's constraint.

    Only when the backend could not enforce it (a server without JSON-schema support)
    or generation stopped early (`max_tokens`). `text` is the raw output, so a caller
    can put the error in a replanning prompt.
    """

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text


@runtime_checkable
class Engine(Protocol):
    """A text generator. Methods are async and never block the event loop."""

    name: str
    """Model name as served (logs, metrics, run records)."""

    async def start(self) -> None:
        """Load or connect, then warm up. Raises `EngineUnavailableError` when it cannot."""
        ...

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        """The whole completion, validated against `request.constraint` if one is set."""
        ...

    def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        """The completion as it is generated; the constraint is checked after the last delta."""
        ...

    async def close(self) -> None:
        """Release the model or connection; idempotent."""
        ...


def chat_messages(request: GenerateRequest) -> list[dict[str, str]]:
    """The request as chat messages: the system head (when there is one), then the user's."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    return [*messages, {"role": "user", "content": request.prompt}]


def as_finish_reason(reason: str | None) -> FinishReason | None:
    """A backend's finish reason in this protocol's terms (unknown ones count as `stop`)."""
    if reason is None:
        return None
    if reason in ("stop", "length", "abort", "error"):
        return cast(FinishReason, reason)
    return "stop"


@asynccontextmanager
async def opened_stream(
    engine: Engine, request: GenerateRequest
) -> AsyncGenerator[AsyncIterator[TokenDelta], None]:
    """`engine.stream(request)`, closed when the block ends however it ends: a reader that
    stops early (cancelled, or failing on a piece) ends the request there and then (the
    server stops generating, its connection is released), not whenever the garbage
    collector finalizes the generator."""
    deltas = engine.stream(request)
    try:
        yield deltas
    finally:
        close = getattr(deltas, "aclose", None)
        if close is not None:
            await close()
