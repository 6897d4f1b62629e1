"""Large step outputs in Postgres: stored once by the workflow, read by whoever answers.

The workflow stores through a local activity (its input never enters history; only the
small `OutputRef` does); the respond activity, `AgentClient` and a continued run read the
outputs back by reference.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import asyncpg
from temporalio import activity

from agentkeel.schemas import names
from agentkeel.schemas.outputs import (
    CombineOutputsInput,
    LoadedOutputs,
    LoadOutputsInput,
    StoreOutputInput,
    output_ref,
    resolve_refs,
)
from agentkeel.schemas.result import OutputRef, StepOutcome


class OutputStore:
    def __init__(self, pool: asyncpg.Pool | asyncpg.Connection) -> None:
        self._pool = pool

    async def store(self, request: StoreOutputInput) -> OutputRef:
        text = json.dumps(request.output, separators=(",", ":"))
        await self._pool.execute(
            "INSERT INTO agent_outputs (ref, tenant, workflow_id, step_id, output, bytes) "
            "VALUES ($1, $2, $3, $4, $5::jsonb, $6) ON CONFLICT (ref) DO NOTHING",
            request.ref,
            request.tenant,
            request.workflow_id,
            request.step_id,
            text,
            len(text),
        )
        items = len(request.output) if isinstance(request.output, list) else None
        return OutputRef(ref=request.ref, bytes=len(text), items=items)

    async def combine(self, request: CombineOutputsInput) -> OutputRef:
        """One list out of stored lists, in the order of `parts` (inside Postgres: the
        parts never travel through the workflow)."""
        row = await self._pool.fetchrow(
            "INSERT INTO agent_outputs (ref, tenant, workflow_id, step_id, output, bytes) "
            "SELECT $1, $2, $3, $4, coalesce(jsonb_agg(e.item ORDER BY p.ord, e.ord), "
            "'[]'::jsonb), coalesce(sum(length(e.item::text)), 0) "
            "FROM unnest($5::text[]) WITH ORDINALITY AS p(ref, ord) "
            "JOIN agent_outputs o ON o.ref = p.ref "
            "CROSS JOIN LATERAL jsonb_array_elements(o.output) WITH ORDINALITY AS e(item, ord) "
            "ON CONFLICT (ref) DO UPDATE SET ref = excluded.ref "
            "RETURNING bytes, jsonb_array_length(output) AS items",
            request.ref,
            request.tenant,
            request.workflow_id,
            request.step_id,
            request.parts,
        )
        assert row is not None
        return OutputRef(ref=request.ref, bytes=row["bytes"], items=row["items"])

    async def load(self, refs: Sequence[str]) -> dict[str, Any]:
        rows = await self._pool.fetch(
            "SELECT ref, output FROM agent_outputs WHERE ref = ANY($1::text[])", list(refs)
        )
        return {row["ref"]: json.loads(row["output"]) for row in rows}

    async def resolved(self, steps: Sequence[StepOutcome]) -> list[StepOutcome]:
        """`steps` with every output that travelled by reference put back in place."""
        return resolve_refs(steps, await self.load([r for s in steps if (r := output_ref(s))]))


class OutputActivities:
    def __init__(self, store: OutputStore) -> None:
        self._store = store

    @activity.defn(name=names.STORE_OUTPUT)
    async def store_output(self, request: StoreOutputInput) -> OutputRef:
        return await self._store.store(request)

    @activity.defn(name=names.COMBINE_OUTPUTS)
    async def combine_outputs(self, request: CombineOutputsInput) -> OutputRef:
        return await self._store.combine(request)

    @activity.defn(name=names.LOAD_OUTPUTS)
    async def load_outputs(self, request: LoadOutputsInput) -> LoadedOutputs:
        return LoadedOutputs(outputs=await self._store.load(request.refs))
