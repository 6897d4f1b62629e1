"""What every route of the gateway is given: who calls (from the `Authorization` header)
and the gateway's parts (from the app's state), as FastAPI dependencies.

The routes live in modules of their own (`gateway.routes.*`), so what `create_app` builds
reaches them through the app rather than through a closure; a dependency that reads only
the `Request` adds nothing to the OpenAPI document. Module level: FastAPI resolves the
annotations of the routes by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from agentkeel.client.agent_client import AgentClient
from agentkeel.gateway.audit import AuditReader
from agentkeel.gateway.keys import ApiKeys, Caller
from agentkeel.gateway.quotas import Lease, Quotas, watches
from agentkeel.gateway.run_poller import RunPollers
from agentkeel.gateway.runs import Runs
from agentkeel.schemas.gateway import Problem, QuotaProblem
from agentkeel.schemas.request import AgentRequest

__all__ = ["PROBLEMS", "CallerDep", "GatewayDep", "GatewayParts", "watches"]

PROBLEMS: dict[int | str, dict[str, Any]] = {
    **{code: {"model": Problem} for code in (400, 401, 403, 404, 409, 413, 415, 421, 503)},
    429: {
        "model": QuotaProblem,
        "description": "a quota is full, or the key's or tenant's model budget is spent "
        "(`type` `/problems/budget-exhausted`, `BudgetProblem`; see `Retry-After`)",
    },
}
"""The error answers every route may give, as the OpenAPI document lists them."""


@dataclass(frozen=True)
class GatewayParts:
    """What `create_app` builds once and the routes share (kept in `app.state.gateway`)."""

    client: AgentClient
    runs: Runs
    pollers: RunPollers
    ledger: AuditReader
    quotas: Quotas | None
    """None without Redis: no quota is enforced."""
    max_wait_s: float
    """The longest a request may wait for a result (`AGENTKEEL_GATEWAY_MAX_WAIT_S`)."""

    async def reserve(self, who: Caller, request: AgentRequest) -> Lease | None:
        """A slot of the caller's quota of runs (or watches) in flight, if quotas are kept."""
        if self.quotas is None:
            return None
        return await self.quotas.reserve_run(
            who.quota_id, request.tenant, watching=watches(request)
        )

    async def release(self, lease: Lease | None) -> None:
        if self.quotas is not None and lease is not None:
            await self.quotas.release(lease)


def _caller(request: Request) -> Caller:
    # Read from the request, not declared as a header parameter: the OpenAPI document
    # states the keys as its bearer security scheme (gateway/openapi.py).
    keys: ApiKeys = request.app.state.keys
    return keys.caller(request.headers.get("authorization"))


def _parts(request: Request) -> GatewayParts:
    parts: GatewayParts = request.app.state.gateway
    return parts


CallerDep = Annotated[Caller, Depends(_caller)]
"""Who calls, from the `Authorization` header."""
GatewayDep = Annotated[GatewayParts, Depends(_parts)]
"""The gateway's parts."""
