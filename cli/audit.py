"""`agentkeel audit`: the effects ledger as operators read it, newest first.

Every side effect a run claimed (made, failed, declined, or still waiting), every one the
workflow refused, and every approval decision, with its actor, approver, provenance,
request id and run: by tenant, actor, target (an order) and time.
"""

from __future__ import annotations

import json

import asyncpg

from agentkeel.activities.effects_ledger import EffectLedger
from agentkeel.schemas.effects import AuditEntry, AuditQuery, EffectStatus


async def audit_entries(database_url: str, query: AuditQuery) -> list[AuditEntry]:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
    try:
        return await EffectLedger(pool).entries(query)
    finally:
        await pool.close()


def entries_json(entries: list[AuditEntry]) -> str:
    return json.dumps([e.model_dump(mode="json") for e in entries], indent=2)


def format_audit(entries: list[AuditEntry]) -> str:
    if not entries:
        return "no side effects recorded for this query"
    lines = []
    for e in entries:
        who = e.actor.role + (f":{e.actor.subject}" if e.actor.subject else "")
        who += f" ({e.actor.name})" if e.actor.name else ""
        line = (
            f"{e.created_at:%Y-%m-%d %H:%M:%S}  {e.status.value:<8}  {e.tool} {e.target}"
            f"  {e.amount_cents} cents  by {who}  run {e.workflow_id}"
        )
        if e.request_id:
            line += f"  request {e.request_id}"
        if e.approver:
            line += f"  decided by {e.approver}"
        if e.settled_at is not None:  # how the claim ended, and when
            line += f"  ended {e.settled_at:%Y-%m-%d %H:%M:%S}"
        elif e.status is EffectStatus.CLAIMED:
            line += "  still claimed"
        if e.error_type:
            line += f"  {e.error_type}: {e.reason}"
        untrusted = [name for name, origin in e.provenance.items() if not origin.trusted]
        if untrusted:
            line += f"  untrusted: {', '.join(untrusted)}"
        lines.append(line)
    return "\n".join(lines)
