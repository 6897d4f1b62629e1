"""Live parcel tracking from the carrier: `track_shipment` (merged into batch requests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field
from temporalio.exceptions import ApplicationError

from agentkeel import ActorScoped, ToolArgs, ToolCall, ToolContext, not_found, tool
from agentkeel.examples.shop import queries as q
from agentkeel.examples.shop.carrier_api import Tracking, TrackingEvent
from agentkeel.examples.shop.downstreams import CARRIER
from agentkeel.examples.shop.resources import shop

__all__ = ["TrackShipmentArgs", "Tracking", "TrackingEvent", "track_shipment"]


class TrackShipmentArgs(ToolArgs):
    tracking_number: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")


class TrackShipmentInput(TrackShipmentArgs, ActorScoped):
    """What the activity receives: the arguments plus what the workflow adds (the same
    fields as the tool's own `input_model`; named here for stand-ins and tests)."""


def _tracking(out: dict[str, Any]) -> str:
    last = out["events"][-1] if out["events"] else None
    eta = f", expected {out['eta']}" if out.get("eta") else ""
    seen = f"; last seen: {last['description']} in {last['location']}" if last else ""
    return f"Shipment {out['tracking_number']} ({out['carrier']}) is {out['status']}{eta}{seen}."


async def track_shipment_many(
    calls: Sequence[ToolCall[TrackShipmentArgs]],
) -> list[Tracking | BaseException]:
    """`track_shipment` for many parcels in one carrier request (its batch endpoint); each
    call is checked against its own actor and gets its own result or error."""
    numbers = [call.args.tracking_number.strip() for call in calls]
    results: dict[int, Tracking | BaseException] = {}
    for i, (call, number) in enumerate(zip(calls, numbers, strict=True)):
        try:
            await _check_owner(call.ctx, number)
        except ApplicationError as exc:
            results[i] = exc
    asked = sorted({n for i, n in enumerate(numbers) if i not in results})
    if asked:
        carrier = shop(calls[0].ctx).carrier
        answers = dict(zip(asked, await carrier.track_many(asked), strict=True))
        for i, number in enumerate(numbers):
            if i not in results:  # a refused call's number was never asked
                results[i] = answers[number]
    return [results[i] for i in range(len(calls))]


@tool(
    downstream=CARRIER,
    expected_ms=60,
    max_concurrency=3,
    many=track_shipment_many,
    render=_tracking,
)
async def track_shipment(args: TrackShipmentArgs, ctx: ToolContext) -> Tracking:
    """Get live tracking of a shipment from the carrier."""
    number = args.tracking_number.strip()
    await _check_owner(ctx, number)
    return await shop(ctx).carrier.track(number)


async def _check_owner(ctx: ToolContext, number: str) -> None:
    """The shipment must be one of the caller's tenant, whatever the role (a tracking
    number is the order id padded: staff of another tenant could guess it), and a
    customer's own. The carrier knows no tenants: nothing is asked of it before this."""
    owner = await shop(ctx).pool.fetchval(q.SHIPMENT_OWNER, number, ctx.tenant)
    ctx.require_owner(owner, f"shipment {number!r}")
    if owner is None:
        raise not_found(f"shipment {number!r}")
