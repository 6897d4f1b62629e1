"""What an OpenAI-compatible server is, found out once at start: its kind and the model's API.

The kind decides the structured-output mode (see `openai_compat`): `vllm` when `/models`
says the server is vLLM (`owned_by: "vllm"`), `llamacpp` when it says llama.cpp
(`owned_by: "llamacpp"`) or the server answers llama.cpp's `GET /props`, `gbnf` when its
OpenAPI title names llama.cpp (llama-cpp-python's server), else `json_schema`.

The API (`PromptApi`) for `auto`: chat, unless the server shows the model has no chat
template of its own. vLLM renders a template for `POST /tokenize` with `messages` and
refuses when the model has none; llama.cpp's `/props` names the model's template
(`chat_template`). Any other server is taken to be a chat server (hosted providers are).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from agentkeel.inference.engines.protocol import EngineUnavailableError

if TYPE_CHECKING:
    from openai import AsyncOpenAI


def new_client(base_url: str, *, api_key: str = "EMPTY", timeout_s: float = 120.0) -> AsyncOpenAI:
    """A client with one connection pool and no client-side retries (Temporal owns them)."""
    try:
        from openai import AsyncOpenAI
    except ImportError as exc:
        raise EngineUnavailableError(
            "the `openai` package is not installed: pip install 'agentkeel[gpu]' "
            "or 'agentkeel[llm-cpu]'"
        ) from exc
    # An empty key is a server without one (the client would refuse it, or send an admin
    # key it finds in the environment instead).
    return AsyncOpenAI(
        base_url=base_url.rstrip("/"), api_key=api_key or "EMPTY", timeout=timeout_s, max_retries=0
    )


class ServerProbe:
    """The probes of one server's root (beside `/v1`), each answering None when unsure."""

    def __init__(self, base_url: str, *, api_key: str, timeout_s: float) -> None:
        self.root = base_url.rstrip("/").removesuffix("/v1")
        # A server started with --api-key wants it on these routes too.
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._timeout_s = timeout_s

    async def structured_mode(self, owner: str) -> str:
        """The structured-output mode for a server whose `/models` names `owner`."""
        if owner == "vllm":
            return "vllm"
        if owner == "llamacpp" or await self._llamacpp_props() is not None:
            return "llamacpp"
        if await self._is_llama_cpp_python():
            return "gbnf"
        return "json_schema"

    async def has_chat_template(self, mode: str, model: str) -> bool | None:
        """Whether the model has its own chat template; None where the server cannot say."""
        if mode == "vllm":
            body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
            answer = await self._request("POST", "tokenize", json=body)
            return isinstance(answer, dict) and "tokens" in answer
        if mode == "llamacpp":
            props = await self._llamacpp_props()
            return bool(props.get("chat_template")) if props is not None else None
        return None

    async def _llamacpp_props(self) -> dict[str, Any] | None:
        props = await self._request("GET", "props")
        if isinstance(props, dict) and "default_generation_settings" in props:
            return props
        return None

    async def _is_llama_cpp_python(self) -> bool:
        """llama-cpp-python's server titles its OpenAPI document "... llama.cpp Python API"."""
        document = await self._request("GET", "openapi.json")
        info = document.get("info") if isinstance(document, dict) else None
        return isinstance(info, dict) and "llama.cpp" in str(info.get("title", ""))

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """`<root>/<path>` as JSON; None when it does not answer so."""
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s) as http:
                response = await http.request(
                    method, f"{self.root}/{path}", headers=self._headers, **kwargs
                )
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
