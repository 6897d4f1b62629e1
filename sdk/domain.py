"""A domain: everything a business brings to agentkeel, declared as one value.

The core (workflow, graph, DAG scheduler, caches, approvals, watches, gateway, workers)
knows tools, roles and words only through the `Domain` a process serves. A domain is a
package of the business's own: its typed tool functions (`agentkeel.tool`), the persona
and ground rules its prompts use, its intents, who may do what, which arguments name its
entities, the services its tools load, and optionally a vocabulary for the reading tier,
migrations and seed data, demo questions and a rules policy. `docs/domains.md` walks
through writing one.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from agentkeel.schemas.actor import SYSTEM_ROLE
from agentkeel.schemas.tools.downstreams import Downstream
from agentkeel.schemas.tools.spec import ToolSpec
from agentkeel.sdk.mcp import McpServer
from agentkeel.sdk.pattern_check import pattern_problem, patterns_of
from agentkeel.sdk.provisioning import DemoQuestion, LocalService, Migrations, ToolSetup
from agentkeel.sdk.roles import Role
from agentkeel.sdk.wording import EntityPattern, Vocabulary

__all__ = [
    "SYSTEM_ROLE",
    "DemoQuestion",
    "Domain",
    "DomainError",
    "EntityPattern",
    "LocalService",
    "Migrations",
    "Role",
    "ToolSetup",
    "Vocabulary",
]


_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class DomainError(ValueError):
    """A domain declares something the core cannot serve; the message says what."""


@dataclass(frozen=True, eq=False)  # one value per process, compared by identity
class Domain:
    """What a business brings: one value a worker serves (`AGENTKEEL_DOMAIN`)."""

    name: str
    """Lower-case letters, digits and `_`: part of cache keys and migration versions."""
    tools: Sequence[ToolSpec]
    """Its tools, each made with `agentkeel.tool` (the built-in `wait` is always there)."""
    persona: str
    """Who the agent is, in one or two sentences: the first line of every prompt."""
    ground_rules: str = ""
    """What the agent must never do, whatever a request says (the tools enforce it too)."""
    intents: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Intent -> the tools it usually needs; the router picks among them, and a request
    may cause only the side effects of the intents it was read as. Empty: every tool is
    an intent of its own name."""
    roles: Sequence[Role] = ()
    """Its kinds of actors, besides the built-in `system`."""
    entity_args: Sequence[str] = ()
    """Arguments and result fields that name an entity (`account_id`, `ticket_id`): a side
    effect on one invalidates what was cached about it."""
    entity_lists: Mapping[str, str] = field(default_factory=dict)
    """Result fields that list entities -> the entity field (`ticket_ids` -> `ticket_id`)."""
    entity_patterns: Sequence[EntityPattern] = ()
    """How its entities are written in questions (the guard, the reading, speculation)."""
    downstreams: Sequence[Downstream] = ()
    """The services its tools load, with their default caps."""
    vocabulary: Vocabulary | None = None
    migrations: Migrations | None = None
    seed: Callable[[Any], Awaitable[Any]] | None = None
    """Fills its tables with demo data (`agentkeel up` on an empty database), given an
    asyncpg connection."""
    demo_questions: Sequence[DemoQuestion] = ()
    demo_script: Callable[[Any, str, str], Awaitable[int]] | None = None
    """What `agentkeel demo` runs after its questions, given the `AgentClient`, the
    database URL and the demo's tenant: returns how many of its parts failed."""
    rules_policy: Callable[[float], Any] | None = None
    """A model-free policy (`inference.policy.Policy`) for runs without a model, made with
    the router threshold. None: without a model only requests carrying a plan run."""
    resources: Callable[[ToolSetup], AbstractAsyncContextManager[Any]] | None = None
    """Opens what its tools use (clients of its own services), once per CPU worker; the
    value is `ToolContext.resources`. None: `ToolContext.resources` is the `ToolSetup`
    (`ctx.resources.pool`, `ctx.resources.http`, `ctx.resources.settings`)."""
    settings: type[BaseModel] | None = None
    """Its own settings, read from `AGENTKEEL_<NAME>_<FIELD>` variables at start."""
    example_plan: Mapping[str, Any] | None = None
    """One valid plan in its own tools, shown to models as the plan format."""
    local_services: Sequence[LocalService] = ()
    """Stand-ins `agentkeel up` starts for its services on a laptop (see `cli.stack`)."""
    untrusted_effects: Literal["refuse", "approve"] = "refuse"
    """A side effect whose target or amount comes from untrusted content (tool output, a
    value only the planner wrote): refused with `UntrustedArgument`, or sent to an
    approver who sees where each value came from (`schemas.plan.provenance`)."""
    effect_window_s: int = 86_400
    """The window approval thresholds and self-service limits count in: what an actor, and
    what a target (an account), moved in it across every run (the effects ledger)."""
    mcp_servers: Sequence[McpServer] = ()
    """MCP servers whose tools join `tools` when a worker starts (`docs/mcp.md`); a
    deployment may add more (`AGENTKEEL_MCP_SERVERS`)."""
    withdrawn_tools: Mapping[str, str] = field(default_factory=dict)
    """Set by the worker, not by a domain: MCP tools (a name, or `server_*`) left out of the
    catalog at start, with why (a server unreachable, a tool that cannot be served)."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise DomainError(f"domain name {self.name!r} must be lower-case letters, digits and _")
        names = [spec.name for spec in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise DomainError(f"domain {self.name}: tools named twice: {', '.join(duplicates)}")
        if "wait" in names:
            raise DomainError(f"domain {self.name}: 'wait' is a built-in tool")
        if self.untrusted_effects not in ("refuse", "approve"):
            raise DomainError(
                f"domain {self.name}: untrusted_effects is 'refuse' or 'approve', "
                f"not {self.untrusted_effects!r}"
            )
        if isinstance(self.effect_window_s, bool) or not (
            isinstance(self.effect_window_s, int) and self.effect_window_s > 0
        ):
            raise DomainError(
                f"domain {self.name}: effect_window_s is a whole number of seconds above 0, "
                f"not {self.effect_window_s!r}"
            )
        roles = [r.name for r in self.roles]
        if SYSTEM_ROLE in roles or len(set(roles)) != len(roles):
            raise DomainError(
                f"domain {self.name}: roles must be unique and not {SYSTEM_ROLE!r} (built in)"
            )
        for intent, tools in self.intents.items():
            unknown = sorted(set(tools) - set(names) - {"wait"})
            if unknown:
                raise DomainError(
                    f"domain {self.name}: intent {intent!r} names unknown tools {unknown}"
                )
        known_downstreams = {d.name for d in self.downstreams}
        for spec in self.tools:
            if spec.downstream is not None and spec.downstream.name not in known_downstreams:
                raise DomainError(
                    f"domain {self.name}: tool {spec.name} loads downstream "
                    f"{spec.downstream.name!r}, which `downstreams` does not list"
                )
            if spec.fn is None and not spec.runs_in_workflow:
                raise DomainError(
                    f"domain {self.name}: tool {spec.name} has no function (use agentkeel.tool)"
                )
        # Its own MCP servers' tools are listed when a worker starts, which checks again.
        self.check_patterns(pending=tuple(s.tool_prefix for s in self.mcp_servers))

    def check_patterns(self, *, pending: tuple[str, ...] = ()) -> None:
        """Raise `DomainError` naming the first pattern of `rules_policy` (made with
        `agentkeel.pattern_policy`) that cannot plan a run this catalog admits: a tool,
        an argument, an intent, a `{group}` or a `$ref` field that does not exist.
        `pending`: prefixes of tool names not listed yet (MCP servers' `server_`)."""
        problem = pattern_problem(
            patterns_of(self.rules_policy), self.tools, self.intent_tools(), pending=pending
        )
        if problem is not None:
            raise DomainError(f"domain {self.name}: {problem}")

    @property
    def env_prefix(self) -> str:
        """Where its own settings are read from: `AGENTKEEL_<NAME>_`."""
        return f"AGENTKEEL_{self.name.upper()}_"

    def role(self, name: str) -> Role | None:
        """The role called `name` (the built-in system role included), or None."""
        if name == SYSTEM_ROLE:
            return _SYSTEM
        return next((r for r in self.roles if r.name == name), None)

    def is_scoped(self, role_name: str) -> bool:
        """Whether `role_name` acts for one subject only: the ownership rule's test."""
        role = self.role(role_name)
        return role is not None and role.scoped

    @property
    def approver_roles(self) -> tuple[str, ...]:
        """The domain's roles that may decide approvals (the system role aside)."""
        return tuple(r.name for r in self.roles if r.may_approve)

    @property
    def role_names(self) -> tuple[str, ...]:
        return (SYSTEM_ROLE, *(r.name for r in self.roles))

    def actor_problem(
        self, role_name: str, subject: str | None, *, subject_patterns: bool = True
    ) -> str | None:
        """What makes an actor of `role_name` (acting for `subject`) no actor of this
        domain, naming the field; None when it is one. The workflow refuses such a
        request, the gateway such a key, and the client's fast path serves it nothing.
        `subject_patterns=False` leaves the roles' `subject_pattern` out (a run recorded
        before the workflow checked them replays as it ran)."""
        role = self.role(role_name)
        if role is None:
            known = ", ".join(self.role_names)
            return f"actor.role: {role_name!r} is not a role of domain {self.name} ({known})"
        if role.scoped and subject is None:
            return (
                f"actor.subject is required for role {role.name}: it acts for one subject "
                f'(give {{"role": "{role.name}", "subject": ...}}, or --as {role.name}:SUBJECT)'
            )
        pattern = role.subject_pattern
        if (
            subject_patterns
            and subject is not None
            and pattern is not None
            and not re.fullmatch(pattern, subject)
        ):
            return (
                f"actor.subject {subject!r} is not a {role.name} subject (it must match {pattern})"
            )
        if not role.scoped and subject is not None:
            return (
                f"actor.subject is not allowed for role {role.name}: it acts for no one "
                "subject (drop it)"
            )
        return None

    def intent_tools(self) -> Mapping[str, Sequence[str]]:
        """Intent -> tools; each tool its own intent when the domain declares none."""
        if self.intents:
            return self.intents
        return {spec.name: (spec.name,) for spec in self.tools}


_SYSTEM = Role(SYSTEM_ROLE, "a trusted service", may_approve=True, may_send_plans=True)
