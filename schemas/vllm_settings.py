"""Typed settings of the in-process vLLM engine, one docstring per lever.

Plain data with no vLLM import, so `workers/` can build and check them (and tests can
read them) where vLLM is not installed. `VllmSettings.engine_args()` maps them onto
vLLM's `AsyncEngineArgs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentkeel.schemas.choices import PromptApi


@dataclass(frozen=True, kw_only=True)
class SpeculativeSettings:
    """Speculative decoding: a cheap proposer drafts tokens, the model verifies them in one step."""

    method: Literal["ngram", "draft_model"] = "ngram"
    """`ngram`: draft by matching the prompt's own n-grams (free; pays off when the output
    copies the input, e.g. IDs and tool results in a plan). `draft_model`: a small model
    of the same tokenizer drafts."""
    num_speculative_tokens: int = 4
    """Tokens drafted per step."""
    prompt_lookup_max: int = 4
    """n-gram only: longest n-gram matched against the prompt."""
    prompt_lookup_min: int = 2
    """n-gram only: shortest n-gram matched against the prompt."""
    draft_model: str | None = None
    """draft_model only: path or name of the draft model."""

    def to_config(self) -> dict[str, Any]:
        """vLLM's `speculative_config`."""
        if self.method == "ngram":
            return {
                "method": "ngram",
                "num_speculative_tokens": self.num_speculative_tokens,
                "prompt_lookup_max": self.prompt_lookup_max,
                "prompt_lookup_min": self.prompt_lookup_min,
            }
        if not self.draft_model:
            raise ValueError("speculative decoding with method='draft_model' needs draft_model")
        return {
            "method": "draft_model",
            "model": self.draft_model,
            "num_speculative_tokens": self.num_speculative_tokens,
        }


@dataclass(frozen=True, kw_only=True)
class VllmSettings:
    """How one in-process model is loaded. Built in `workers/` from settings, never at import."""

    model: str
    """Model directory or hub name (offline here: a directory, e.g. from
    `python -m agentkeel.inference.model_builds.gemma_cpu`)."""
    served_model_name: str | None = None
    """Name in logs and run records; defaults to `model`."""
    tokenizer: str | None = None
    """Tokenizer directory when it is not beside the weights."""
    quantization: str | None = None
    """Weight quantization: `awq`, `gptq`, `fp8`, `compressed-tensors`, ...; None: read from
    the model's config (or none)."""
    dtype: str = "auto"
    """Activation/weight dtype: `auto`, `bfloat16`, `float16`, `float32` (`float32` on CPUs:
    bf16 there compiles slowly and gave wrong text with this Gemma conversion)."""
    max_model_len: int | None = None
    """Prompt plus output tokens per sequence; bounds KV-cache per request. None: the
    model's maximum."""
    max_num_seqs: int | None = None
    """Sequences decoded together in one continuous batch; the inference worker accepts as
    many concurrent activities. None: vLLM's default for the platform."""
    gpu_memory_utilization: float = 0.9
    """Fraction of accelerator memory vLLM may take (weights, activations, KV cache).
    On a CPU: fraction of host memory, unless `kv_cache_memory_bytes` is set."""
    kv_cache_memory_bytes: int | None = None
    """Fixed KV-cache size instead of `gpu_memory_utilization` (CPU: 1 GiB is enough for
    a 270M model; replaces the legacy `VLLM_CPU_KVCACHE_SPACE`)."""
    enable_prefix_caching: bool = True
    """Reuse the KV cache of a shared prompt prefix (the system prompt and tool catalog).
    vLLM turns it off itself where the platform cannot."""
    speculative: SpeculativeSettings | None = None
    """Speculative decoding; None: off."""
    rope_scaling: Mapping[str, Any] | None = None
    """Replaces the model config's `rope_parameters` (transformers 5's name for
    `rope_scaling`), e.g. `{"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6,
    "original_max_position_embeddings": 32768}` to stretch the context; raise
    `max_model_len` with it. Given whole: include `rope_theta`."""
    enforce_eager: bool = False
    """Skip CUDA-graph capture / torch.compile: faster start, slower decode. True on CPUs
    (compilation there took over five minutes)."""
    seed: int = 0
    prepend_bos: bool = False
    """Put the tokenizer's BOS token first when the tokenizer does not add it (the GGUF
    Gemma tokenizer; without BOS that model produces garbage)."""
    api: PromptApi = "auto"
    """`chat`: every request goes through the model's chat template (a system and a user
    message, as `vllm serve` does for `/v1/chat/completions`); `completions`: the raw text
    (base models); `auto`: chat when the tokenizer (or `chat_template`) has a template."""
    chat_template: str | None = None
    """A Jinja chat template (its text, or the path of a file holding it) used instead of
    the tokenizer's, like `vllm serve --chat-template`: for a model shipped without one."""
    warmup: bool = True
    """Run two short requests in `start()` (one with logprobs, one constrained), so the
    first user request does not pay for first-call allocations and grammar start-up."""
    warmup_prompt: str = "Hello"
    log_stats: bool = False
    """vLLM's periodic throughput log lines."""
    structured_outputs_backend: str = "guidance"
    """vLLM's structured-output backend for every constrained request. `guidance`
    (llguidance): it takes the whole plan schema and honours the schema's `x-guidance`
    whitespace option (`inference/engines/structured.py`, at most one space between
    tokens); `auto` would pick xgrammar for some schemas and let a small model pad them
    with newlines until the token budget runs out."""
    engine_overrides: Mapping[str, Any] = field(default_factory=dict)
    """Other `vllm.engine.arg_utils.AsyncEngineArgs` fields, passed as given (escape hatch)."""

    def engine_args(self) -> dict[str, Any]:
        """Keyword arguments for `AsyncEngineArgs` (plain data, testable without vLLM)."""
        args: dict[str, Any] = {
            "model": self.model,
            "tokenizer": self.tokenizer,
            "served_model_name": self.served_model_name,
            "quantization": self.quantization,
            "dtype": self.dtype,
            "max_model_len": self.max_model_len,
            "max_num_seqs": self.max_num_seqs,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "kv_cache_memory_bytes": self.kv_cache_memory_bytes,
            "enable_prefix_caching": self.enable_prefix_caching,
            "enforce_eager": self.enforce_eager,
            "seed": self.seed,
            "disable_log_stats": not self.log_stats,
        }
        args["structured_outputs_config"] = {"backend": self.structured_outputs_backend}
        if self.speculative is not None:
            args["speculative_config"] = self.speculative.to_config()
        if self.rope_scaling is not None:
            args["hf_overrides"] = {"rope_parameters": dict(self.rope_scaling)}
        args.update(self.engine_overrides)
        return {k: v for k, v in args.items() if v is not None}
