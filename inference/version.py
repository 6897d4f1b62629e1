"""Digests of the policies' behaviour, part of every cache key."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import cache
from importlib import resources

# Everything that decides what the rules policy routes, plans and answers.
RULES_MODULES = ("policy.py", "intents.py", "plans.py", "answer.py")


def module_digest(package: str, names: Iterable[str]) -> str:
    """A short digest of the source files `names` in `package`: changes with their code."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(resources.files(package).joinpath(name).read_bytes())
    return digest.hexdigest()[:10]


@cache
def rules_policy_version() -> str:
    """Changes whenever the rules policy's code does, so a deploy never serves stale paths."""
    return "rules-" + module_digest("agentkeel.inference.rules", RULES_MODULES)
