"""The route of the audit trail: side effects, refusals and approval decisions, read from
the effects ledger in Postgres (the only route that reads the database, not Temporal)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter

from agentkeel.gateway.audit import audit_query
from agentkeel.gateway.routes.dependencies import PROBLEMS, CallerDep, GatewayDep
from agentkeel.schemas.effects import AuditEntry

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/audit", response_model=list[AuditEntry], responses=PROBLEMS)
async def list_audit(
    who: CallerDep,
    gw: GatewayDep,
    tenant: str | None = None,
    actor: str | None = None,
    target: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 100,
) -> Any:
    """Side effects, refusals and approval decisions, newest first (the effects ledger)."""
    query = audit_query(
        who, tenant=tenant, actor=actor, target=target, since=since, until=until, limit=limit
    )
    return await gw.ledger.entries(query)
