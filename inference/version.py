"""Digests of the policies' behaviour, part of every cache key."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path

from agentkeel.sdk.domain import Domain
from agentkeel.sdk.serving import active_domain

# What the model-free policies share: how tool results become an answer.
MODEL_FREE_MODULES = ("answers.py", "plans_only.py", "patterns.py")


def module_digest(package: str, names: Iterable[str]) -> str:
    """A short digest of the source files `names` in `package`: changes with their code."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(resources.files(package).joinpath(name).read_bytes())
    return digest.hexdigest()[:10]


def rules_policy_version() -> str:
    """Changes whenever the served domain's rules policy (or its package's code) does, so a
    deploy never serves stale paths."""
    return _rules_version(active_domain())


@cache
def _rules_version(domain: Domain) -> str:
    digest = hashlib.sha256(module_digest("agentkeel.inference", MODEL_FREE_MODULES).encode())
    if domain.rules_policy is None:
        return "plans-only-" + digest.hexdigest()[:10]
    module = inspect.getmodule(domain.rules_policy)
    source = Path(inspect.getfile(module)) if module is not None else None
    if source is not None:
        # The domain's whole package (its templates, renders and tools decide plans), or
        # the one file of a domain that is a single module.
        in_package = (
            bool(module and module.__package__) and (source.parent / "__init__.py").exists()
        )
        files = sorted(source.parent.rglob("*.py")) if in_package else [source]
        for path in files:
            digest.update(path.relative_to(source.parent).as_posix().encode())
            digest.update(path.read_bytes())
    return "rules-" + digest.hexdigest()[:10]
