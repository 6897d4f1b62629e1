"""What a tool function receives besides its arguments: `ToolContext`.

The actor and the tenant come from the request, never from a plan; the idempotency key from the
workflow; the resources from the domain's `resources` factory, opened once per worker.
`require_owner` is the domain's ownership rule, enforced in the tool: a scoped actor (a
customer, an employee) reaches its own rows only, and for it a row that does not exist is
refused the same way, so probing ids tells nothing about others' rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.actor import Actor
from agentkeel.schemas.errors import NOT_AUTHORIZED, NOT_FOUND

__all__ = ["ToolCall", "ToolContext", "not_found"]

A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class ToolContext:
    actor: Actor | None
    """Whose authority the call carries; None: a trusted caller."""
    resources: Any
    """What the domain's `resources` factory opened; without one, the worker's `ToolSetup`
    (`pool`, `http`, the domain's `settings`)."""
    idempotency_key: str | None = None
    """A side effect's key: the same for every attempt and every resend of one request's
    effect. The tool must make the effect at most once per key (in the same transaction)."""
    call_id: str | None = None
    """The run's name for this call (`s2[3]`)."""
    tenant: str = "default"
    """The request's tenant: whose data this call may reach. A tool that keeps data for
    several tenants filters every query by it; nothing of another tenant's is ever read."""
    is_scoped: Callable[[str], bool] = lambda _role: False
    """Whether a role acts for one subject only (the domain's `Role.scoped`)."""

    @property
    def scoped(self) -> bool:
        """True when the actor may reach its own subject's rows only."""
        return self.actor is not None and self.is_scoped(self.actor.role)

    def require_owner(self, owner: object | None, what: str) -> None:
        """Refuse unless the actor may reach a row owned by `owner` (None: no such row).

        Compared as text, so an integer key and the actor's subject agree."""
        if not self.scoped:
            return
        assert self.actor is not None
        if owner is None or str(owner) != self.actor.subject:
            raise ApplicationError(
                f"{self.actor.describe()} may not access {what}",
                type=NOT_AUTHORIZED,
                non_retryable=True,
            )


@dataclass(frozen=True)
class ToolCall(Generic[A]):
    """One call of a merged batch (`agentkeel.tool(many=...)`): its arguments and context."""

    args: A
    ctx: ToolContext


def not_found(what: str) -> ApplicationError:
    """The non-retryable error of a row or entity that does not exist."""
    return ApplicationError(f"{what} not found", type=NOT_FOUND, non_retryable=True)
