"""Choices a deployment makes that both its settings and the core name: how a model tier
is prompted, and when the planner starts beside the router. Defined here, with the wire
contracts, so that the settings read them without importing the code that acts on them.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["PlanAhead", "PlanAheadUnseen", "PromptApi"]

PromptApi = Literal["auto", "chat", "completions"]
"""How an engine sends a request: `chat` (messages through the model's chat template: the
API instruct models are made for), `completions` (one raw text: base models, which have
no template), or `auto` (chat where the model has a chat template, see each engine)."""

PlanAhead = Literal["auto", "always", "off"]
"""`auto`: plan ahead for a tenant whose recent routes were mostly unsure; `always`;
`off`: plan only after an unsure route."""

PlanAheadUnseen = Literal["ahead", "after"]
"""What `auto` does where neither the tenant nor the deployment has routed enough to go
by: `ahead` (plan beside the router, for a few routes at a time: the price is the plans
cancelled where the router turns out sure) or `after` (route, then plan)."""
