"""An engine over any OpenAI-compatible completions server (`vllm serve`, llama.cpp, ...).

The client is built once per process and base URL with its own retries off: Temporal
retries the activity, and two retry layers would multiply the wait of a dead server.
Completions, not chat: base models have no chat template.

Structured output, best first, learnt per engine and kept for the life of the process:

- `vllm`: `extra_body={"structured_outputs": {"json": schema}}` (or `{"choice": [...]}`),
  vLLM's own parameter since 0.12 (earlier: `guided_json`);
- `llamacpp`: llama.cpp's server (`llama-server`), whose completions endpoint does not
  apply `response_format` but takes its own fields: `json_schema` (compiled to a grammar
  by the server) and, for a choice, a GBNF `grammar` of the alternatives;
- `gbnf`: a GBNF `grammar` converted from the JSON Schema (`gbnf.py`): servers built on
  llama.cpp whose completions take only a grammar (llama-cpp-python's);
- `json_schema`: `response_format={"type": "json_schema", ...}`, the OpenAI form;
- `json_object`: `response_format={"type": "json_object"}` (llama.cpp's server may
  offer only this);
- `none`: unconstrained.

`auto` picks `vllm` when `/models` says the server is vLLM (`owned_by: "vllm"`), and
`llamacpp` when it says llama.cpp (`owned_by: "llamacpp"`) or the server answers llama.cpp's
`GET /props`, and `gbnf` when its OpenAPI title names llama.cpp (llama-cpp-python's server);
else it starts at `json_schema` and steps down when the server answers 400/422
to a mode. A server may also ignore a parameter it does not know (vLLM logs and drops
unknown fields), so every output is validated afterwards (`constraints.check_output`). A
server left with no constraint at all is reported once, not per request.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

import httpx
import structlog

from agentkeel.inference.engines.constraints import check_output
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    Constraint,
    EngineRequestError,
    EngineUnavailableError,
    FinishReason,
    GenerateRequest,
    GenerateResult,
    JsonSchemaConstraint,
    TokenDelta,
    TokenLogprob,
    Usage,
    as_finish_reason,
)
from agentkeel.inference.engines.structured import structured_body

if TYPE_CHECKING:
    from openai import AsyncOpenAI

StructuredMode = Literal["auto", "vllm", "llamacpp", "gbnf", "json_schema", "json_object", "none"]
_NEXT_MODE = {"json_schema": "json_object", "json_object": "none"}
"""Where to step down on a 400/422. Never from `vllm` or `llamacpp`: those servers have
structured outputs, so their 400 is about the request (a schema the grammar compiler
refuses), and stepping down would weaken every later request for one bad schema."""
log = structlog.get_logger(__name__)


def new_client(base_url: str, *, api_key: str = "EMPTY", timeout_s: float = 120.0) -> AsyncOpenAI:
    """A client with one connection pool and no client-side retries (Temporal owns them)."""
    try:
        from openai import AsyncOpenAI
    except ImportError as exc:
        raise EngineUnavailableError(
            "the `openai` package is not installed: pip install 'agentkeel[gpu]' "
            "or 'agentkeel[llm-cpu]'"
        ) from exc
    return AsyncOpenAI(
        base_url=base_url.rstrip("/"), api_key=api_key, timeout=timeout_s, max_retries=0
    )


class OpenAICompatEngine:
    """`Engine` over an OpenAI-compatible `/v1/completions` endpoint."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        timeout_s: float = 120.0,
        check_timeout_s: float = 5.0,
        structured_output: StructuredMode = "auto",
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
            check_timeout_s: how long `start()` waits for `/models`.
            structured_output: see the module docstring.
            prompt_prefix: text put before every prompt, e.g. `"<bos>"` for a model whose
                tokenizer does not add BOS (the Gemma GGUF conversion); servers turn a
                special token's text into its id.
            client: an `AsyncOpenAI` to use instead of the engine's own (tests); the
                caller then owns it and closes it.
        """
        self.name = model
        self._base_url = base_url
        # The engine owns its client (one pool per engine, closed with it) unless one is given.
        self._owns_client = client is None
        self._client = client or new_client(base_url, api_key=api_key, timeout_s=timeout_s)
        self._check_timeout_s = check_timeout_s
        self._api_key = api_key
        self._mode: str = structured_output
        self._prompt_prefix = prompt_prefix

    @property
    def structured_mode(self) -> str:
        """The structured-output mode in use (`auto` until `start()` has probed)."""
        return self._mode

    async def start(self) -> None:
        """Check that the server answers and serves the model; choose the structured mode."""
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
            owner = getattr(served[self.name], "owned_by", "")
            if owner == "vllm":
                self._mode = "vllm"
            elif owner == "llamacpp" or await self._answers_llamacpp_props():
                self._mode = "llamacpp"
            elif await self._is_llama_cpp_python():
                self._mode = "gbnf"
            else:
                self._mode = "json_schema"
        log.info("model_server_constraints", url=self._base_url, model=self.name, mode=self._mode)
        if self._mode == "none":
            self._warn_unconstrained()

    async def _answers_llamacpp_props(self) -> bool:
        """llama.cpp's server answers `GET /props` (at its root, beside `/v1`)."""
        props = await self._get_root_json("props")
        return isinstance(props, dict) and "default_generation_settings" in props

    async def _get_root_json(self, path: str) -> Any:
        """`GET <server root>/<path>` as JSON; None when it does not answer so."""
        root = self._base_url.rstrip("/").removesuffix("/v1")
        headers = {"Authorization": f"Bearer {self._api_key}"}  # a server with --api-key
        try:
            async with httpx.AsyncClient(timeout=self._check_timeout_s) as http:
                response = await http.get(f"{root}/{path}", headers=headers)
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    async def _is_llama_cpp_python(self) -> bool:
        """llama-cpp-python's server titles its OpenAPI document "... llama.cpp Python API"."""
        document = await self._get_root_json("openapi.json")
        info = document.get("info") if isinstance(document, dict) else None
        return isinstance(info, dict) and "llama.cpp" in str(info.get("title", ""))

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

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        response, mode = await self._create(request, stream=False)
        choice = response.choices[0]
        finish = as_finish_reason(choice.finish_reason)
        usage = response.usage
        return GenerateResult(
            text=choice.text,
            finish_reason=finish,
            logprobs=_logprobs(choice.logprobs) if request.logprobs is not None else None,
            usage=Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
            ),
            parsed=_parse(request.constraint, choice.text, finish, mode),
        )

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        response, mode = await self._create(request, stream=True)
        parts: list[str] = []
        finish: FinishReason | None = None
        try:
            async for chunk in response:
                if not chunk.choices:  # the closing usage chunk
                    continue
                choice = chunk.choices[0]
                finish = as_finish_reason(choice.finish_reason)
                parts.append(choice.text)
                yield TokenDelta(
                    text=choice.text,
                    logprobs=_logprobs(choice.logprobs) if request.logprobs is not None else [],
                    finish_reason=finish,
                )
        finally:
            await response.close()
        _parse(request.constraint, "".join(parts), finish, mode)

    async def _create(self, request: GenerateRequest, *, stream: bool) -> tuple[Any, str]:
        """Send the request, stepping down structured modes the server refuses.

        A lower mode is kept only once the server has accepted it, so a 400 for another
        reason (a prompt too long) does not degrade later requests.
        """
        import openai

        mode = self._mode if request.constraint is not None else "none"
        if mode == "auto":  # used before start(): assume a server of the OpenAI kind
            mode = "json_schema"
        first_error: openai.APIStatusError | None = None
        while True:
            try:
                response = await self._client.completions.create(
                    **self._params(request, mode, stream=stream)
                )
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
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
        params: dict[str, Any] = {
            "model": self.name,
            "prompt": self._prompt_prefix + request.prompt,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "stream": stream,
        }
        if request.stop:
            params["stop"] = request.stop
        if request.seed is not None:
            params["seed"] = request.seed
        if request.logprobs is not None:
            params["logprobs"] = request.logprobs
        if request.request_id:
            params["extra_headers"] = {"X-Request-Id": request.request_id}
        if stream:
            params["stream_options"] = {"include_usage": True}
        extra = structured_body(request.constraint, mode)
        if extra:
            params["extra_body"] = extra
        return params


def _parse(constraint: Constraint | None, text: str, finish: str | None, mode: str) -> Any:
    if isinstance(constraint, ChoiceConstraint) and mode == "json_schema":
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        text = value if isinstance(value, str) else text
    if isinstance(constraint, JsonSchemaConstraint | ChoiceConstraint):
        return check_output(constraint, text, finish)
    return None


def _logprobs(raw: Any) -> list[TokenLogprob]:
    if raw is None:
        return []
    content = getattr(raw, "content", None) or (
        raw.get("content") if isinstance(raw, dict) else None
    )
    if content:
        # llama.cpp answers completions with the chat form: one entry per token, each with
        # its `top_logprobs` as a list.
        return [_content_logprob(item) for item in content]
    if not getattr(raw, "tokens", None):
        return []
    tops = raw.top_logprobs or [None] * len(raw.tokens)
    return [
        TokenLogprob(token=token, logprob=logprob if logprob is not None else 0.0, top=top or {})
        for token, logprob, top in zip(raw.tokens, raw.token_logprobs or [], tops, strict=False)
    ]


def _content_logprob(item: Any) -> TokenLogprob:
    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    tops = field(item, "top_logprobs") or []
    return TokenLogprob(
        token=field(item, "token") or "",
        logprob=field(item, "logprob") or 0.0,
        top={field(t, "token") or "": field(t, "logprob") or 0.0 for t in tops},
    )
