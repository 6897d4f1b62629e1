"""The payload converter every agentkeel client and worker uses: pydantic JSON, and a
payload it cannot decode fails what carried it at once, never a task retried forever.

Temporal's SDK wraps a decoding error of a workflow's input in a plain `RuntimeError`,
which fails the workflow *task*: retried on every attempt, the run stays Running for
good (JSON nested past pydantic's depth limit, an unknown `encoding`, bytes that are not
UTF-8). As a non-retryable `ApplicationError`, the same error fails the run with a
named cause; a signal that cannot be decoded is dropped with a log, an update rejected,
an activity's input fails its activity without retries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError

from agentkeel.schemas.errors import UNDECODABLE_PAYLOAD

_SAID_CHARS = 300


class CheckedPayloadConverter(PydanticPayloadConverter):
    def from_payloads(
        self, payloads: Sequence[Payload], type_hints: list[type] | None = None
    ) -> list[Any]:
        try:
            return super().from_payloads(payloads, type_hints)
        except ApplicationError:
            raise
        except Exception as exc:  # RecursionError, UnicodeDecodeError, unknown encodings
            said = str(exc)[:_SAID_CHARS]
            raise ApplicationError(
                f"a payload could not be decoded: {type(exc).__name__}: {said}",
                type=UNDECODABLE_PAYLOAD,
                non_retryable=True,
            ) from None


checked_data_converter: DataConverter = replace(
    pydantic_data_converter, payload_converter_class=CheckedPayloadConverter
)
