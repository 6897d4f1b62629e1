"""The roles of a domain: the kinds of actor it serves, and what the workflow lets each do.

Apart from `Domain` because a role is what the workflow, the gateway and the client check an
actor against (`Domain.actor_problem`), while the rest of a domain is what its tools and
prompts are made of.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Role"]


@dataclass(frozen=True)
class Role:
    """One kind of actor of a domain, and what the workflow and the tools let it do.

    Row-level rules stay in the tools (`ToolContext.require_owner`); these are the rules the
    workflow itself enforces before any tool runs.
    """

    name: str
    description: str = ""
    scoped: bool = False
    """Acts for one subject (`Actor.subject`: a client, an employee, a team) and may read
    and change that subject's rows only; `ToolContext.require_owner` refuses the rest.
    A scoped actor's side effects are held to the self-service limit of approvals, and it
    shares cached answers only with the same subject."""
    may_approve: bool = False
    """May decide on another actor's side effect waiting for approval."""
    may_send_plans: bool = False
    """May send a request carrying its own plan with side effects (reads are open to
    every role). The system role always may."""
    subject_pattern: str | None = None
    """For a scoped role: a regular expression each subject must match in full
    (`[1-9][0-9]{0,9}` for numeric ids, `emp-[0-9]+`). An actor whose subject does not is
    refused at the door, before any tool reads it."""

    def __post_init__(self) -> None:
        if self.subject_pattern is not None:
            try:
                re.compile(self.subject_pattern)
            except re.error as exc:
                raise ValueError(
                    f"role {self.name}: subject_pattern {self.subject_pattern!r}: {exc}"
                ) from None
