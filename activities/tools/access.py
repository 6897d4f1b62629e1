"""Row-level access of the tools: a customer reads and changes only its own rows.

Enforced here, in the tools, not in prompts: whatever a plan asks for, a call that reaches
another customer's row fails with a non-retryable `NotAuthorized` naming what was refused,
and nothing of that row is returned. For a customer, a row that does not exist is refused
the same way, so probing ids tells nothing about other customers.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from agentkeel.schemas.actor import Actor, Role
from agentkeel.schemas.errors import NOT_AUTHORIZED


def is_customer(actor: Actor | None) -> bool:
    return actor is not None and actor.role is Role.CUSTOMER


def require_owner(actor: Actor | None, owner_customer_id: int | None, what: str) -> None:
    """Refuse unless `actor` may see a row owned by `owner_customer_id` (None: no such row)."""
    if actor is None or actor.role is not Role.CUSTOMER:
        return
    if owner_customer_id is None or owner_customer_id != actor.customer_id:
        raise ApplicationError(
            f"{actor.describe()} may not access {what}", type=NOT_AUTHORIZED, non_retryable=True
        )
