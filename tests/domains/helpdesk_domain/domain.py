"""The helpdesk's tools, roles and planner."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from agentkeel import (
    Domain,
    Downstream,
    EntityPattern,
    Migrations,
    PlanPattern,
    Role,
    ToolArgs,
    ToolContext,
    ToolSetup,
    not_found,
    pattern_policy,
    tool,
)

TICKETS = Downstream("tickets_db", "the helpdesk's tickets (Postgres)")
OPS = Downstream("ops_api", "the operations API that restarts services", default_concurrency=1)


class TicketArgs(ToolArgs):
    ticket_id: int = Field(ge=1, le=2**31 - 1)


class Ticket(BaseModel):
    ticket_id: int
    requester: str
    service: str
    title: str
    status: str


class ServiceArgs(ToolArgs):
    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,39}$")


class Service(BaseModel):
    name: str
    status: str
    restarts: int


class RestartArgs(ToolArgs):
    service: str = Field(pattern=r"^[a-z][a-z0-9-]{0,39}$")
    ticket_id: int = Field(ge=1, le=2**31 - 1)


class Restart(BaseModel):
    service: str
    ticket_id: int
    restarts: int
    repeated: bool


@tool(downstream=TICKETS, cache_ttl=timedelta(seconds=30))
async def get_ticket(args: TicketArgs, ctx: ToolContext) -> Ticket:
    """Get a ticket with its requester, service and status."""
    row = await ctx.resources.fetchrow(
        "SELECT * FROM helpdesk_tickets WHERE ticket_id = $1", args.ticket_id
    )
    ctx.require_owner(row and row["requester"], f"ticket {args.ticket_id}")
    if row is None:
        raise not_found(f"ticket {args.ticket_id}")
    return Ticket.model_validate(dict(row))


@tool(downstream=TICKETS, cache_ttl=timedelta(seconds=10))
async def get_service(args: ServiceArgs, ctx: ToolContext) -> Service:
    """Get a service's health and how often it was restarted."""
    row = await ctx.resources.fetchrow("SELECT * FROM helpdesk_services WHERE name = $1", args.name)
    if row is None:
        raise not_found(f"service {args.name!r}")
    return Service.model_validate(dict(row))


@tool(
    downstream=OPS,
    side_effect=True,
    needs_approval=True,
    identity_args=("service",),
    timeout=timedelta(seconds=20),
)
async def restart_service(args: RestartArgs, ctx: ToolContext) -> Restart:
    """Restart a service for a ticket. Side-effecting; every restart needs an approval."""
    async with ctx.resources.acquire() as conn, conn.transaction():
        ticket = await conn.fetchrow(
            "SELECT requester FROM helpdesk_tickets WHERE ticket_id = $1", args.ticket_id
        )
        ctx.require_owner(ticket and ticket["requester"], f"ticket {args.ticket_id}")
        if ticket is None:
            raise not_found(f"ticket {args.ticket_id}")
        made = await conn.fetchval(
            "INSERT INTO helpdesk_restarts VALUES ($1, $2, $3) ON CONFLICT DO NOTHING "
            "RETURNING service",
            ctx.idempotency_key,
            args.service,
            args.ticket_id,
        )
        if made is not None:
            await conn.execute(
                "UPDATE helpdesk_services SET restarts = restarts + 1, status = 'healthy' "
                "WHERE name = $1",
                args.service,
            )
        restarts = await conn.fetchval(
            "SELECT restarts FROM helpdesk_services WHERE name = $1", args.service
        )
    if restarts is None:
        raise not_found(f"service {args.service!r}")
    return Restart(
        service=args.service, ticket_id=args.ticket_id, restarts=restarts, repeated=made is None
    )


@asynccontextmanager
async def _resources(setup: ToolSetup) -> AsyncIterator[Any]:
    yield setup.pool


async def seed(conn: Any) -> None:
    await conn.execute(
        """
        INSERT INTO helpdesk_services VALUES ('web', 'degraded', 0), ('mail', 'healthy', 0);
        INSERT INTO helpdesk_tickets VALUES
            (1, 'ada', 'web', 'the site is slow', 'open'),
            (2, 'ada', 'mail', 'no mail since noon', 'open'),
            (3, 'bob', 'web', 'login fails', 'open');
        """
    )


_SERVICE = r"(?P<service>[a-z][a-z0-9-]*)"
_TICKET = r"ticket #?(?P<ticket>\d+)"

domain = Domain(
    name="helpdesk",
    tools=(get_ticket, get_service, restart_service),
    persona="You are an IT helpdesk agent: you look up tickets and services and restart them.",
    ground_rules="Never restart a service no ticket names.",
    intents={
        "restart": ("get_ticket", "restart_service"),
        "status": ("get_service", "get_ticket"),
        "watch": ("get_ticket",),
        "ticket": ("get_ticket",),
    },
    roles=(
        Role("employee", "files tickets; sees its own only", scoped=True),
        Role(
            "agent", "works every ticket, approves restarts", may_approve=True, may_send_plans=True
        ),
    ),
    entity_args=("ticket_id", "service"),
    entity_patterns=(EntityPattern("ticket_id", r"\bticket #?(\d+)", guard=False),),
    downstreams=(TICKETS, OPS),
    migrations=Migrations("helpdesk_domain"),
    seed=seed,
    resources=_resources,
    rules_policy=pattern_policy(
        PlanPattern(
            "restart",
            rf"\brestart {_SERVICE} for {_TICKET}",
            [
                {"id": "t", "tool": "get_ticket", "args": {"ticket_id": "{ticket}"}},
                {
                    "id": "r",
                    "tool": "restart_service",
                    "args": {"service": "{service}", "ticket_id": "$t.ticket_id"},
                },
            ],
        ),
        PlanPattern(
            "watch",
            rf"\btell me when {_TICKET} is resolved",
            [
                {
                    "id": "w",
                    "tool": "get_ticket",
                    "args": {"ticket_id": "{ticket}"},
                    "repeat": {
                        "until": {"ref": "$w.status", "in": ["resolved"]},
                        "every_s": 1,
                        "timeout_s": 120,
                    },
                }
            ],
        ),
        PlanPattern(
            "status",
            rf"\bstatus of {_SERVICE} and {_TICKET}",
            [
                {"id": "a", "tool": "get_service", "args": {"name": "{service}"}},
                {"id": "b", "tool": "get_ticket", "args": {"ticket_id": "{ticket}"}},
            ],
        ),
        PlanPattern(
            "ticket",
            _TICKET,
            [{"id": "a", "tool": "get_ticket", "args": {"ticket_id": "{ticket}"}}],
        ),
    ),
)
