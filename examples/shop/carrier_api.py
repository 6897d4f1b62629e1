"""The carrier's tracking API over HTTP: one parcel, or many in one request.

Connection errors and timeouts propagate as retryable errors; a 429 or 5xx is a
retryable `CarrierUnavailable`, any other refusal a final `CarrierRejected`.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

import httpx
from pydantic import BaseModel, Field
from temporalio.exceptions import ApplicationError

from agentkeel import not_found


class TrackingEvent(BaseModel):
    at: str
    location: str
    description: str


class Tracking(BaseModel):
    """One parcel as the carrier tells it: the result of `track_shipment`."""

    tracking_number: str
    carrier: str
    status: str
    eta: str | None = None
    events: list[TrackingEvent] = Field(default_factory=list)


class CarrierApi:
    def __init__(self, http: httpx.AsyncClient, base_url: str) -> None:
        self._http = http
        self._base_url = base_url.rstrip("/")

    async def track(self, number: str) -> Tracking:
        response = await self._http.get(f"{self._base_url}/v1/tracking/{quote(number, safe='')}")
        if response.status_code == httpx.codes.NOT_FOUND:
            raise parcel_not_found(number)
        _raise_for_status(response, repr(number))
        return Tracking.model_validate(response.json())

    async def track_many(self, numbers: Sequence[str]) -> list[Tracking | ApplicationError]:
        """Each parcel's tracking or its own error, in order, in one request when the
        carrier takes the batch (one parcel at a time when it refuses the batch itself, so
        one bad element cannot fail the others)."""
        response = await self._http.post(
            f"{self._base_url}/v1/tracking:batch", json={"tracking_numbers": list(numbers)}
        )
        if response.is_client_error and response.status_code != httpx.codes.TOO_MANY_REQUESTS:
            return [await self._track_or_error(n) for n in numbers]
        _raise_for_status(response, f"{len(numbers)} parcels")
        return [
            Tracking.model_validate(answer["tracking"])
            if "tracking" in answer
            else parcel_not_found(number)
            for number, answer in zip(numbers, response.json()["results"], strict=True)
        ]

    async def _track_or_error(self, number: str) -> Tracking | ApplicationError:
        try:
            return await self.track(number)
        except ApplicationError as exc:
            return exc


def parcel_not_found(number: str) -> ApplicationError:
    return not_found(f"shipment with tracking number {number!r}")


def _raise_for_status(response: httpx.Response, what: str) -> None:
    if response.status_code == httpx.codes.TOO_MANY_REQUESTS or response.is_server_error:
        raise ApplicationError(
            f"carrier service answered {response.status_code} for {what}",
            type="CarrierUnavailable",
        )
    if response.is_error:
        raise ApplicationError(
            f"carrier service rejected {what} with {response.status_code}",
            type="CarrierRejected",
            non_retryable=True,
        )
