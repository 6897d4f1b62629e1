"""Which embedder wrote a vector: part of every semantic entry's key.

Vectors of two models (or of one model's float32 and int8 forms) live in different spaces:
a cosine between them means nothing, and one that happened to clear the threshold would
serve the wrong path. So each entry is stored under the identity of the embedder that
wrote it, and an index only ever searches the entries of its own embedder: changing
`AGENTKEEL_EMBEDDER_MODEL` starts an empty semantic tier (refilled as runs finish) rather
than comparing new questions with old vectors.

The identity names the model directory, the dimension, and a digest of the files the
model is loaded from (weights included), so that a retrained model saved under the same
name is another model. Hashing reads the weights once more at start: about 0.1 s for the
packaged all-MiniLM-L6-v2 (90 MB), from the page cache the load just filled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

CHUNK = 1 << 20
SKIPPED_DIRS = frozenset({"onnx", "openvino"})
"""Other backends' exports beside the weights: not what the torch backend loads."""


def model_files(model_dir: Path, *, skip_dirs: Iterable[str] = SKIPPED_DIRS) -> list[Path]:
    """The directory's files, sorted, less hidden ones, READMEs and `skip_dirs`."""
    skipped = set(skip_dirs)
    found = []
    for path in sorted(model_dir.rglob("*")):
        parts = path.relative_to(model_dir).parts
        if not path.is_file() or any(p.startswith(".") for p in parts):
            continue
        if parts[0] in skipped or path.name.lower().startswith("readme"):
            continue
        found.append(path)
    return found


def files_digest(root: Path, files: Iterable[Path]) -> str:
    """sha256 over each file's path (relative to `root`) and content; 16 hex digits."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with path.open("rb") as f:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def embedder_identity(model_dir: Path, dim: int, *, variant: str = "", files: list[Path]) -> str:
    """`<dir name>/<dim>/<digest>[/<variant>]`, e.g. `model/384/3f1c.../int8`."""
    identity = f"{model_dir.name}/{dim}/{files_digest(model_dir, files)}"
    return f"{identity}/{variant}" if variant else identity
