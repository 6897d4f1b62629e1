"""A digest of the policy's behaviour, part of every path-cache key."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

# Everything that decides what the rules policy routes, plans and answers.
RULES_MODULES = ("rules.py", "rules_intents.py", "rules_plans.py", "render.py")


@cache
def rules_policy_version() -> str:
    """Changes whenever the rules policy's code does, so a deploy never serves stale paths."""
    digest = hashlib.sha256()
    for name in RULES_MODULES:
        digest.update(resources.files("inference").joinpath(name).read_bytes())
    return "rules-" + digest.hexdigest()[:10]
