"""Who a run acts for: the actor whose authority every tool call carries.

The calling service says who the actor is (it authenticated them); the workflow checks the
role against the domain it serves, and the tools enforce what that actor may read or
change, row by row. A model never decides it: the actor travels from the request to each
tool activity beside the plan's arguments, never inside them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Annotated, Any

from anyascii import anyascii
from pydantic import BaseModel, ConfigDict, StringConstraints, model_validator

from agentkeel.schemas.text import SafeName

SYSTEM_ROLE = "system"
"""A trusted service: the default when a request names no actor, in every domain."""

RoleName = Annotated[
    str, StringConstraints(min_length=1, max_length=40, pattern=r"^[a-z][a-z0-9_]*$")
]
Subject = Annotated[
    str, StringConstraints(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")
]


class Actor(BaseModel):
    """A role of the served domain (`Domain.roles`, or `system`), and for a scoped role the
    subject it acts for: whose rows it may read and change."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: RoleName = SYSTEM_ROLE
    subject: Subject | None = None
    """The one the actor acts for (a customer id, an employee id); required for a scoped
    role of the domain, refused for the others."""
    name: SafeName | None = None
    """Who it is, in words, for the run record and approvals."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_customer_id(cls, data: Any) -> Any:
        # The first release's wire form named the subject `customer_id` (an integer):
        # requests and histories written then still decode.
        if isinstance(data, dict) and "customer_id" in data:
            data = dict(data)
            legacy = data.pop("customer_id")
            if legacy is not None:
                if "subject" in data and data["subject"] is not None:
                    raise ValueError("give subject or customer_id, not both")
                if isinstance(legacy, bool) or not isinstance(legacy, int) or legacy < 1:
                    raise ValueError("customer_id must be a positive integer")
                data["subject"] = str(legacy)
        return data

    @property
    def audience(self) -> str:
        """Who may see what this actor's runs saw: cached answers, plans, tool results and
        conversation turns are shared only within one audience."""
        return f"{self.role}:{self.subject}" if self.subject is not None else "all"

    def describe(self) -> str:
        who = f" {self.name}" if self.name else ""
        if self.subject is not None:
            return f"{self.role} {self.subject}{who}"
        return f"{self.role}{who}"


SYSTEM_ACTOR = Actor()


def role_refusal_reason(tool: str, allowed: Sequence[str] | None, actor: Actor) -> str | None:
    """Why `actor` may not call `tool`, whose `allowed` roles leave its role out; None where
    it may (every role where `allowed` is None; the system role always)."""
    if allowed is None or actor.role == SYSTEM_ROLE or actor.role in allowed:
        return None
    return f"{actor.describe()} may not call {tool} (it allows {', '.join(allowed) or 'no role'})"


def name_skeleton(name: str) -> str:
    """What a display name looks like, not how it is spelled: invisible characters dropped
    (a zero-width space), compatibility forms folded (full-width letters), look-alike
    letters of other scripts transliterated (U+0430, a Cyrillic a), case and spacing ignored."""
    visible = "".join(
        c for c in unicodedata.normalize("NFKC", name) if unicodedata.category(c) != "Cf"
    )
    return " ".join(anyascii(visible).casefold().split())


def same_person(requester: Actor, approver: Actor) -> bool:
    """Whether `approver` could be the one who asked: compared by identity (role and
    subject), and by how their names look; an unnamed actor without a subject cannot be
    told apart from another of its role."""
    if requester.subject is not None and approver.subject is not None:
        if (requester.role, requester.subject) == (approver.role, approver.subject):
            return True
    if requester.name and approver.name:
        if name_skeleton(requester.name) == name_skeleton(approver.name):
            return True
    # (`system` is a trusted service, not a person: another service of it may decide.)
    anonymous = requester.subject is None and not requester.name
    return anonymous and requester.role == approver.role != SYSTEM_ROLE
