"""Who a run acts for: the actor whose authority every tool call carries.

The calling service says who the actor is (it authenticated them); the tools enforce what
that actor may read or change, row by row. A model never decides it: the actor travels
from the request to each tool activity beside the plan's arguments, never inside them.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentkeel.schemas.text import SafeName


class Role(StrEnum):
    CUSTOMER = "customer"
    """A shop customer: sees and acts on its own customer record, orders, shipments and
    refunds only."""
    STAFF = "staff"
    """A support agent: reads everything; large refunds wait for approval."""
    SYSTEM = "system"
    """A trusted service (the default when a request names no actor)."""


class Actor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role = Role.SYSTEM
    customer_id: int | None = Field(default=None, ge=1, le=2**31 - 1)
    """The customer acted for; required for, and only allowed with, role `customer`."""
    name: SafeName | None = None
    """Who it is, in words, for the run record and approvals."""

    @model_validator(mode="after")
    def _customer_id_matches_role(self) -> Actor:
        if self.role is Role.CUSTOMER and self.customer_id is None:
            raise ValueError("a customer actor needs customer_id")
        if self.role is not Role.CUSTOMER and self.customer_id is not None:
            raise ValueError(f"customer_id is only for role customer, not {self.role.value}")
        return self

    @property
    def audience(self) -> str:
        """Who may see what this actor's runs saw: cached answers, plans, tool results and
        conversation turns are shared only within one audience."""
        return f"customer:{self.customer_id}" if self.role is Role.CUSTOMER else "all"

    def describe(self) -> str:
        who = f" {self.name}" if self.name else ""
        if self.role is Role.CUSTOMER:
            return f"customer {self.customer_id}{who}"
        return f"{self.role.value}{who}"


SYSTEM_ACTOR = Actor()
