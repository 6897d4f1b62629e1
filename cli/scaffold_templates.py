"""The files `agentkeel init NAME` writes, as templates of `str.format` (`{name}`).

One read tool and one side effect over a table of its own, its migration and seed, a
model-free planner (patterns), demo questions, a test through `agentkeel.testing`, and a
README. `docs/domains.md` walks through them; a test runs that walk-through.
"""

from __future__ import annotations

FILES: dict[str, str] = {
    "__init__.py": '''"""The {name} domain for agentkeel: `AGENTKEEL_DOMAIN={name}:domain`."""

from {name}.domain import domain

__all__ = ["domain"]
''',
    "tools.py": '''"""The {name} domain's tools: one read, one side effect, over its own table."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field

from agentkeel import Downstream, ToolArgs, ToolContext, not_found, tool

DATABASE = Downstream("{name}_db", "the {name} tables (Postgres)", default_concurrency=10)


class ItemArgs(ToolArgs):
    item_id: int = Field(ge=1, le=2**31 - 1)


class Item(BaseModel):
    item_id: int
    owner: str
    title: str
    status: str


def _item(out: dict) -> str:
    return f"Item {{out['item_id']}} ({{out['title']}}) is {{out['status']}}."


# `trusted_fields`: the item_id it returns is the one it was asked for, so a side effect
# may take its target from it (`$read.item_id`) when the question named that item.
@tool(
    downstream=DATABASE,
    cache_ttl=timedelta(seconds=30),
    render=_item,
    trusted_fields=("item_id",),
)
async def get_item(args: ItemArgs, ctx: ToolContext) -> Item:
    """Get an item with its owner, title and status."""
    row = await ctx.resources.fetchrow(
        "SELECT item_id, owner, title, status FROM {name}_items "
        "WHERE item_id = $1 AND tenant = $2",  # only the run's tenant's rows exist for it
        args.item_id,
        ctx.tenant,
    )
    ctx.require_owner(row and row["owner"], f"item {{args.item_id}}")
    if row is None:
        raise not_found(f"item {{args.item_id}}")
    return Item.model_validate(dict(row))


@tool(
    downstream=DATABASE,
    side_effect=True,
    needs_approval=True,
    identity_args=("item_id",),
    render=_item,
)
async def close_item(args: ItemArgs, ctx: ToolContext) -> Item:
    """Close an item. Side-effecting, at most once per idempotency key; every close waits
    for an admin's approval."""
    async with ctx.resources.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(
            "SELECT item_id, owner, title, status FROM {name}_items "
            "WHERE item_id = $1 AND tenant = $2 FOR UPDATE",
            args.item_id,
            ctx.tenant,
        )
        ctx.require_owner(row and row["owner"], f"item {{args.item_id}}")
        if row is None:
            raise not_found(f"item {{args.item_id}}")
        # The key and the change commit together: a retried call changes nothing twice.
        first = await conn.fetchval(
            "INSERT INTO {name}_changes (idempotency_key, item_id) VALUES ($1, $2) "
            "ON CONFLICT DO NOTHING RETURNING item_id",
            ctx.idempotency_key,
            args.item_id,
        )
        if first is not None:
            await conn.execute(
                "UPDATE {name}_items SET status = 'closed' WHERE item_id = $1", args.item_id
            )
        return Item(item_id=row["item_id"], owner=row["owner"], title=row["title"], status="closed")
''',
    "domain.py": '''"""The {name} domain, served with `AGENTKEEL_DOMAIN={name}:domain`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agentkeel import DemoQuestion, Domain, Migrations, PlanPattern, Role, ToolSetup
from agentkeel import pattern_policy
from {name}.tools import DATABASE, close_item, get_item


@asynccontextmanager
async def resources(setup: ToolSetup) -> AsyncIterator[Any]:
    yield setup.pool  # the tools query the worker's Postgres pool


async def seed(conn: Any) -> None:
    await conn.execute(
        "INSERT INTO {name}_items (item_id, owner, title, status) VALUES "
        "(1, 'ada', 'first item', 'open'), (2, 'ada', 'second item', 'open'), "
        "(3, 'bob', 'bob''s item', 'open') ON CONFLICT DO NOTHING"
    )


domain = Domain(
    name="{name}",
    tools=(get_item, close_item),
    persona="You are the {name} assistant. You answer questions about items, using tools.",
    ground_rules="Never close an item the user did not name.",
    intents={{
        "item_status": ("get_item",),
        "compare_items": ("get_item",),
        "watch_item": ("get_item",),
        "close_item": ("get_item", "close_item"),
    }},
    roles=(
        Role("member", "sees and closes its own items only", scoped=True),
        Role("admin", "sees every item, approves, sends plans", may_approve=True,
             may_send_plans=True),
    ),
    entity_args=("item_id",),
    downstreams=(DATABASE,),
    migrations=Migrations("{name}"),
    seed=seed,
    resources=resources,
    # Tried in order; the first that matches plans (the particular ones come first).
    rules_policy=pattern_policy(
        PlanPattern(
            "compare_items",
            r"\\bcompare items (?P<a>\\d+) and (?P<b>\\d+)",
            [
                {{"id": "a", "tool": "get_item", "args": {{"item_id": "{{a}}"}}}},
                {{"id": "b", "tool": "get_item", "args": {{"item_id": "{{b}}"}}}},
            ],
        ),
        PlanPattern(
            "watch_item",
            r"\\btell me when item (?P<item>\\d+) is closed",
            [
                {{
                    "id": "w",
                    "tool": "get_item",
                    "args": {{"item_id": "{{item}}"}},
                    "repeat": {{
                        "until": {{"ref": "$w.status", "in": ["closed"]}},
                        "every_s": 2,
                        "timeout_s": 3600,
                    }},
                }}
            ],
        ),
        PlanPattern(
            "close_item",
            r"\\bclose item (?P<item>\\d+)",
            [
                {{"id": "read", "tool": "get_item", "args": {{"item_id": "{{item}}"}}}},
                {{"id": "close", "tool": "close_item", "args": {{"item_id": "$read.item_id"}}}},
            ],
        ),
        PlanPattern(
            "item_status",
            r"\\bitem (?P<item>\\d+)",
            [{{"id": "s1", "tool": "get_item", "args": {{"item_id": "{{item}}"}}}}],
        ),
    ),
    demo_questions=(
        DemoQuestion("What is the status of item 1?", "a read"),
        DemoQuestion(
            "What is the status of item 1?", "the same again: a cache hit", shows_cache=True
        ),
        DemoQuestion("Compare items 1 and 3", "two reads in parallel"),
    ),
)
''',
    "migrations/0001_items.sql": """-- The {name} domain's tables, beside agentkeel's own.
CREATE TABLE {name}_items (
    item_id integer PRIMARY KEY,
    -- Whose data: the tools read and change the run's own tenant's rows only.
    tenant  text NOT NULL DEFAULT 'default',
    owner   text NOT NULL,
    title   text NOT NULL,
    status  text NOT NULL DEFAULT 'open'
);

CREATE INDEX {name}_items_tenant_idx ON {name}_items (tenant, item_id);

-- One row per side effect made: the idempotency key commits with the change.
CREATE TABLE {name}_changes (
    idempotency_key text PRIMARY KEY,
    item_id         integer NOT NULL REFERENCES {name}_items (item_id),
    made_at         timestamptz NOT NULL DEFAULT now()
);
""",
    "test_domain.py": '''"""The {name} domain's checks: its catalog, and its plans as a run meets
them.

`agentkeel.testing.check_plan` plans a question with the domain's patterns and holds the
plan to what the worker holds it to (admission, the catalog, provenance, approval), with
no stack. A mistake in a pattern fails earlier: importing the domain raises DomainError.
"""

from __future__ import annotations

from agentkeel import Actor
from agentkeel.testing import check_plan
from {name}.domain import domain

ADA = Actor(role="member", subject="ada")


def test_the_domain_declares_one_read_and_one_side_effect() -> None:
    kinds = {{spec.name: spec.idempotent for spec in domain.tools}}
    assert kinds == {{"get_item": True, "close_item": False}}


def test_two_items_are_read_in_parallel() -> None:
    checked = check_plan(domain, "Compare items 1 and 2")
    assert checked.refused is None
    assert checked.tools == ["get_item", "get_item"]
    assert checked.plan is not None and all(not s.after for s in checked.plan.steps)


def test_a_close_is_admitted_trusted_and_waits_for_an_admin() -> None:
    checked = check_plan(domain, "Close item 2", actor=ADA)
    assert checked.refused is None, checked.refused
    assert checked.tools == ["get_item", "close_item"]
    close = checked.effect("close_item")
    assert close.args == {{"item_id": "$s1.item_id"}}
    # Its target is read by the id the question names: trusted (get_item's trusted_fields).
    assert close.refused is None, close.refused
    assert close.origins["item_id"].trusted
    assert close.approval == "close_item always needs an approval"


def test_a_read_never_plans_the_side_effect() -> None:
    checked = check_plan(domain, "What about item 2?", actor=ADA)
    assert checked.refused is None
    assert checked.tools == ["get_item"] and checked.effects == []


def test_a_question_no_pattern_matches_gets_no_plan() -> None:
    checked = check_plan(domain, "Hello there")
    assert checked.refused is not None and checked.refused.type == "NoPlanner"
''',
    "README.md": """# {name}

An agentkeel domain. Serve it (from the folder that holds `{name}/`):

```bash
export AGENTKEEL_DOMAIN={name}:domain
agentkeel demo                        # the local stack and the demo questions
agentkeel ask "What is the status of item 1?"
agentkeel ask --as member:ada "Close item 3"     # refused: item 3 is bob's
pytest -q {name}/test_domain.py
```

Workers, the gateway and every client read `AGENTKEEL_DOMAIN`; the guide to each part is
agentkeel's `docs/domains.md`.
""",
}
