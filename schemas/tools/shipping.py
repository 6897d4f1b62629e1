"""Live parcel tracking from the carrier: `track_shipment`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.tools.downstreams import CARRIER
from agentkeel.schemas.tools.spec import ActorScoped, ToolArgs, ToolSpec


class TrackShipmentArgs(ToolArgs):
    tracking_number: str = Field(min_length=1, max_length=64)


class TrackShipmentInput(TrackShipmentArgs, ActorScoped):
    """What the activity receives."""


class TrackingEvent(BaseModel):
    at: str
    location: str
    description: str


class Tracking(BaseModel):
    tracking_number: str
    carrier: str
    status: str
    eta: str | None = None
    events: list[TrackingEvent] = Field(default_factory=list)


def _tracking(out: dict[str, Any]) -> str:
    last = out["events"][-1] if out["events"] else None
    eta = f", expected {out['eta']}" if out.get("eta") else ""
    seen = f"; last seen: {last['description']} in {last['location']}" if last else ""
    return f"Shipment {out['tracking_number']} ({out['carrier']}) is {out['status']}{eta}{seen}."


TRACK_SHIPMENT = ToolSpec(
    name="track_shipment",
    downstream=CARRIER,
    batch=True,
    description="Get live tracking of a shipment from the carrier.",
    args_model=TrackShipmentArgs,
    input_model=TrackShipmentInput,
    result_model=Tracking,
    expected_ms=60,
    max_concurrency=3,
    render=_tracking,
)
