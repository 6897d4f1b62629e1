"""Writing one request to an OpenAI-compatible server: the parameters of `create`.

The chat and completions APIs take the prompt and ask for logprobs in different forms, and
the structured-output mode adds fields of its own (`structured.structured_body`): every
writing is here, once, as every reading is in `openai_output`.
"""

from __future__ import annotations

from typing import Any

from agentkeel.inference.engines.protocol import GenerateRequest, chat_messages
from agentkeel.inference.engines.structured import structured_body

__all__ = ["raw_request", "request_params"]


def request_params(
    request: GenerateRequest,
    *,
    model: str,
    mode: str,
    chat: bool,
    prompt_prefix: str,
    stream: bool,
) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` (`chat`) or `completions.create`
    for `request` to `model`, constrained by structured-output `mode`; `prompt_prefix` goes
    before a completions prompt."""
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "stream": stream,
    }
    if chat:
        params["messages"] = chat_messages(request)
        if request.logprobs is not None:
            params["logprobs"] = True
            params["top_logprobs"] = request.logprobs
    else:
        params["prompt"] = prompt_prefix + request.system + request.prompt
        if request.logprobs is not None:
            params["logprobs"] = request.logprobs
    if request.stop:
        params["stop"] = request.stop
    if request.seed is not None:
        params["seed"] = request.seed
    if request.request_id:
        params["extra_headers"] = {"X-Request-Id": request.request_id}
    if stream:
        params["stream_options"] = {"include_usage": True}
    extra = structured_body(request.constraint, mode, chat=chat)
    if extra:
        params["extra_body"] = extra
    return params


def raw_request(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """`params` as the body and the headers of the client's `post` (its documented way to
    send a body of one's own): what `create` sends for them (`extra_body` merged into the
    body, `extra_headers` as headers). The typed `create` transforms every parameter and
    builds a typed model of the answer, which cost more CPU than the rest of the call
    (`python -m bench.engine_calls`); the engine reads the answer as plain JSON
    (`openai_output.first_choice`)."""
    body = {k: v for k, v in params.items() if k not in ("extra_body", "extra_headers")}
    body.update(params.get("extra_body") or {})
    return body, dict(params.get("extra_headers") or {})
