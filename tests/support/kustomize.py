"""The Kubernetes base rendered as `kubectl kustomize` renders it, for the offline checks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import ROOT

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
BASE = ROOT / "deploy" / "kubernetes" / "base"


def render(directory: Path) -> list[dict[str, Any]]:
    """The objects of the kustomization in `directory` (skips where kubectl is missing)."""
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed")
    out = subprocess.run(
        [KUBECTL, "kustomize", str(directory)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [d for d in yaml.safe_load_all(out) if d]


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The object of `kind` named `name`."""
    [found] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found
