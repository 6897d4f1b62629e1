"""A digest of the LLM policy's prompts and logic, part of every cache key with the models."""

from __future__ import annotations

from functools import cache

from agentkeel.inference.version import module_digest

LLM_MODULES = (
    "context.py",
    "plan_schema.py",
    "policy.py",
    "prompts.py",
    "cascade.py",
    "route_reading.py",
)


@cache
def llm_policy_version() -> str:
    """Changes whenever a prompt or the plan schema does, so cached paths never outlive them."""
    return "llm-" + module_digest("agentkeel.inference.llm", LLM_MODULES)
