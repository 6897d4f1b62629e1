"""A digest of the LLM policy's prompts and logic, part of every cache key with the models."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

LLM_MODULES = ("context.py", "plan_schema.py", "policy.py", "prompts.py", "cascade.py")


@cache
def llm_policy_version() -> str:
    """Changes whenever a prompt or the plan schema does, so cached paths never outlive them."""
    digest = hashlib.sha256()
    for name in LLM_MODULES:
        digest.update(resources.files("inference.llm").joinpath(name).read_bytes())
    return "llm-" + digest.hexdigest()[:10]
