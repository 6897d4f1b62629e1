"""`GET /v1/audit`: the effects ledger over HTTP, as far as the caller's key may see.

A key lists its own tenant's ledger; a key of a scoped role (a customer) lists only the
effects made for itself, whatever actor it names. The pool opens on the first request,
so a gateway without a database still serves runs (and answers 503 here).
"""

from __future__ import annotations

from datetime import datetime

import asyncpg
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from agentkeel.activities.effects_ledger import EffectLedger
from agentkeel.gateway.keys import Caller, Refused
from agentkeel.schemas.effects import AuditEntry, AuditQuery, actor_identity
from agentkeel.sdk.serving import active_domain


def audit_query(
    who: Caller,
    *,
    tenant: str | None,
    actor: str | None,
    target: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
) -> AuditQuery:
    """The query `who` may run; `Refused(403)` for another tenant or another's effects."""
    key = who.key
    if key is not None:
        if tenant is not None and tenant != key.tenant:
            raise Refused(403, f"this API key is for tenant {key.tenant!r}, not {tenant!r}")
        tenant = key.tenant
        if active_domain().is_scoped(key.actor.role) and not key.acts_for_others:
            own = actor_identity(key.actor)
            if actor is not None and actor != own:
                raise Refused(403, f"this API key lists only its own effects ({own})")
            actor = own
    try:
        return AuditQuery(
            tenant=tenant or "default",
            actor=actor,
            target=target,
            since=since,
            until=until,
            limit=limit,
        )
    except ValidationError as exc:
        # Answered as any invalid query is: its first error in a line, all in `errors`.
        errors = [{**e, "loc": ("query", *e["loc"])} for e in exc.errors()]
        raise RequestValidationError(errors) from None
    except ValueError as exc:
        raise Refused(422, str(exc)) from None


class AuditReader:
    def __init__(self, database_url: str | None) -> None:
        self._database_url = database_url
        self._pool: asyncpg.Pool | None = None

    async def entries(self, query: AuditQuery) -> list[AuditEntry]:
        if not self._database_url:
            raise Refused(503, "this gateway has no database (AGENTKEEL_DATABASE_URL)")
        if self._pool is None:
            try:
                self._pool = await asyncpg.create_pool(self._database_url, min_size=0, max_size=2)
            except (OSError, asyncpg.PostgresError) as exc:
                raise Refused(503, f"the ledger's database is unavailable: {exc}") from None
        return await EffectLedger(self._pool).entries(query)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
