"""An engine over any OpenAI-compatible server (`vllm serve`, llama.cpp, a hosted provider).

The client is built once per process and base URL with its own retries off: Temporal
retries the activity, and two retry layers would multiply the wait of a dead server.

Two APIs (`api`, see `protocol.PromptApi`): `chat` sends `/v1/chat/completions` a system
and a user message, and the server applies the model's chat template (what instruct and
hosted models are made for); `completions` sends `/v1/completions` one raw text (base
models, which have no template). `auto` asks the server at start (`openai_server`).

Structured output, best first, learnt per engine and kept for the life of the process:

- `vllm`: `extra_body={"structured_outputs": {"json": schema}}` (or `{"choice": [...]}`),
  vLLM's own parameter since 0.12 (earlier: `guided_json`), on either API;
- `llamacpp`: llama.cpp's server (`llama-server`): our GBNF `grammar` of the schema with at
  most one space between JSON tokens, on either API (the server's own conversion of a
  `json_schema` or `response_format` allows runs of whitespace, which a small model pads
  past its token budget); those fields only for a schema GBNF cannot express here. A
  choice is a GBNF `grammar` of the alternatives;
- `gbnf`: a GBNF `grammar` converted from the JSON Schema (`gbnf.py`): servers built on
  llama.cpp that take only a grammar (llama-cpp-python's);
- `json_schema`: `response_format={"type": "json_schema", ...}`, the OpenAI form;
- `json_object`: `response_format={"type": "json_object"}` (a server may offer only this);
- `none`: unconstrained.

`auto` finds the server's kind at start (`openai_server`); an unknown server starts at
`json_schema` and steps down when it answers 400/422 to a mode. A server may also ignore
a parameter it does not know (vLLM logs and drops unknown fields), so every output is
validated afterwards (`constraints.check_output`). A server left with no constraint at
all is reported once, not per request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

import structlog

from agentkeel.inference.engines.openai_output import parse_output, read_answer
from agentkeel.inference.engines.openai_request import raw_request, request_params
from agentkeel.inference.engines.openai_server import ServerProbe, new_client
from agentkeel.inference.engines.openai_stream import chunk_delta, sse_data
from agentkeel.inference.engines.protocol import (
    EngineRequestError,
    EngineUnavailableError,
    FinishReason,
    GenerateRequest,
    GenerateResult,
    PromptApi,
    TokenDelta,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAICompatEngine", "StructuredMode", "new_client"]

StructuredMode = Literal["auto", "vllm", "llamacpp", "gbnf", "json_schema", "json_object", "none"]
_NEXT_MODE = {"json_schema": "json_object", "json_object": "none"}
"""Where to step down on a 400/422. Never from `vllm` or `llamacpp`: those servers have
structured outputs, so their 400 is about the request (a schema the grammar compiler
refuses), and stepping down would weaken every later request for one bad schema."""
log = structlog.get_logger(__name__)


class OpenAICompatEngine:
    """`Engine` over an OpenAI-compatible chat or completions endpoint."""

    streams_json = True
    """`stream` sends the request's constraint too (`stream=True` with the structured
    output of the mode in use): a plan streams, checked whole after its last piece."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        timeout_s: float = 120.0,
        check_timeout_s: float = 5.0,
        structured_output: StructuredMode = "auto",
        api: PromptApi = "completions",
        prompt_prefix: str = "",
        client: AsyncOpenAI | None = None,
    ) -> None:
        """Configure; nothing is contacted before `start()`.

        Args:
            base_url: e.g. `http://127.0.0.1:8000/v1`.
            model: the name the server serves the model under.
            api_key: sent as a bearer token; vLLM without `--api-key` accepts anything.
            timeout_s: per request (a long generation is within it; heartbeats are the
                activity's business).
            check_timeout_s: how long `start()` waits for `/models` and each probe.
            structured_output: see the module docstring.
            api: `chat`, `completions`, or `auto` (decided at start; see `openai_server`).
                Settings default to `auto`; built by hand the engine keeps the completions
                API it always spoke unless told otherwise.
            prompt_prefix: completions only: text put before every prompt, e.g. `"<bos>"`
                for a model whose tokenizer does not add BOS (the Gemma GGUF conversion);
                servers turn a special token's text into its id. A chat template puts the
                model's own BOS.
            client: an `AsyncOpenAI` to use instead of the engine's own (tests); the
                caller then owns it and closes it.
        """
        self.name = model
        self._base_url = base_url
        # The engine owns its client (one pool per engine, closed with it) unless one is given.
        self._owns_client = client is None
        self._client = client or new_client(base_url, api_key=api_key, timeout_s=timeout_s)
        self._check_timeout_s = check_timeout_s
        self._probe = ServerProbe(base_url, api_key=api_key, timeout_s=check_timeout_s)
        self._mode: str = structured_output
        self._api: PromptApi = api
        self._prompt_prefix = prompt_prefix

    @property
    def structured_mode(self) -> str:
        """The structured-output mode in use (`auto` until `start()` has probed)."""
        return self._mode

    @property
    def api(self) -> PromptApi:
        """The API in use (`auto` until `start()` has asked the server)."""
        return self._api

    async def start(self) -> None:
        """Check that the server answers and serves the model; choose the mode and the API."""
        import openai

        try:
            page = await self._client.models.list(timeout=self._check_timeout_s)
            models = [m async for m in page]
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise EngineUnavailableError(
                f"no model server answers at {self._base_url} ({type(exc).__name__}: {exc}); "
                "start it or fix the URL"
            ) from exc
        except openai.APIStatusError as exc:
            raise EngineUnavailableError(
                f"model server at {self._base_url} answered HTTP {exc.status_code} to "
                f"GET /models: {exc.message}"
            ) from exc
        served = {m.id: m for m in models}
        if self.name not in served:
            raise EngineUnavailableError(
                f"model server at {self._base_url} does not serve {self.name!r} "
                f"(it serves: {', '.join(sorted(served)) or 'nothing'})"
            )
        if self._mode == "auto":
            owner = str(getattr(served[self.name], "owned_by", "") or "")
            self._mode = await self._probe.structured_mode(owner)
        kind = self._mode
        if self._api == "auto":
            template = await self._probe.has_chat_template(kind, self.name)
            self._api = "completions" if template is False else "chat"
        log.info(
            "model_server_constraints",
            url=self._base_url,
            model=self.name,
            mode=self._mode,
            api=self._api,
        )
        if self._mode == "none":
            self._warn_unconstrained()

    def _warn_unconstrained(self) -> None:
        log.warning(
            "model_server_unconstrained",
            url=self._base_url,
            model=self.name,
            note="this server applies no output constraint: every structured output is "
            "checked after generation, and invalid ones are retried or fail the step",
        )

    async def close(self) -> None:
        """Close the engine's own connection pool (the worker calls this on shutdown)."""
        if self._owns_client:
            await self._client.close()

    @property
    def _chat(self) -> bool:
        return self._api != "completions"  # `auto` before start(): most servers are chat

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        response, mode = await self._create(request, stream=False)
        wants_logprobs = request.logprobs is not None
        return read_answer(
            response.content, request.constraint, mode, chat=self._chat, logprobs=wants_logprobs
        )

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        # The raw events, not the client's typed chunks (`openai_stream`: their models cost
        # more CPU than the tokens of a fast model take to decode).
        response, mode = await self._create(request, stream=True)
        parts: list[str] = []
        finish: FinishReason | None = None
        wants_logprobs = request.logprobs is not None
        try:
            async for chunk in sse_data(response.aiter_bytes()):
                delta = chunk_delta(chunk, chat=self._chat, logprobs=wants_logprobs)
                if delta is None:
                    continue
                if delta.usage is None:
                    finish = delta.finish_reason
                    parts.append(delta.text)
                yield delta
        finally:
            await response.aclose()
        parse_output(request.constraint, "".join(parts), finish, mode)

    async def _create(self, request: GenerateRequest, *, stream: bool) -> tuple[Any, str]:
        """Send the request, stepping down structured modes the server refuses (a lower mode
        is kept only once the server has accepted it, so a 400 for another reason, a prompt
        too long, does not degrade later requests). Sent raw, errors and options the
        client's own (`openai_request.raw_request`)."""
        import httpx2  # (openai's HTTP client, as lazily imported as openai is)
        import openai

        mode = self._mode if request.constraint is not None else "none"
        if mode == "auto":  # used before start(): assume a server of the OpenAI kind
            mode = "json_schema"
        first_error: openai.APIStatusError | None = None
        path = "/chat/completions" if self._chat else "/completions"
        reconnected = False
        while True:
            body, headers = raw_request(self._params(request, mode, stream=stream))
            try:  # a stream comes back unread (`openai_stream` reads its events)
                response = await self._client.post(
                    path,
                    cast_to=httpx2.Response,
                    body=body,
                    # The model key only, as `create` sends it (a bare `post` may also
                    # send an admin key found in the environment).
                    options={"headers": headers, "security": {"bearer_auth": True}},
                    stream=stream,
                )
            except openai.APIConnectionError as exc:  # a timeout is one too, not retried
                if not reconnected and not isinstance(exc, openai.APITimeoutError):
                    # A pooled keep-alive connection the server closed as the request went
                    # out (llama.cpp's server does, under a steady stream of requests): try
                    # once more, at once, on a fresh one. Generating has no side effect.
                    reconnected = True
                    continue
                # Down or restarting: the caller may serve the step otherwise (the rules).
                raise EngineUnavailableError(
                    f"no model server answers at {self._base_url} ({type(exc).__name__})"
                ) from exc
            except openai.InternalServerError as exc:
                if exc.status_code not in (502, 503, 504):  # a 500 may be this request's
                    raise
                raise EngineUnavailableError(
                    f"model server at {self._base_url} answered HTTP {exc.status_code}"
                ) from exc
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                first_error = first_error or exc
                if mode in _NEXT_MODE:
                    mode = _NEXT_MODE[mode]
                    continue
                raise EngineRequestError(
                    f"{self._base_url} refused the request: {first_error.message}"
                ) from exc
            if request.constraint is not None and mode != self._mode:
                self._mode = mode
                if mode == "none":
                    self._warn_unconstrained()  # once: the mode is kept from now on
            return response, mode

    def _params(self, request: GenerateRequest, mode: str, *, stream: bool) -> dict[str, Any]:
        return request_params(
            request,
            model=self.name,
            mode=mode,
            chat=self._chat,
            prompt_prefix=self._prompt_prefix,
            stream=stream,
        )
