"""`ArgumentOrigin`: where an argument of a side effect came from, as results record it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ArgumentOrigin(BaseModel):
    """Where one argument of a side effect came from (`schemas.plan.provenance`)."""

    model_config = ConfigDict(frozen=True)

    trusted: bool
    says: str
    """In words: "named in the request", "$s1.account_id: get_ticket.account_id, looked up
    by trusted arguments", "'5000' was written by the planner and is not in the request"."""
