"""Inputs of the output-store activities: large step outputs kept by reference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from agentkeel.schemas.result import OutputRef, StepError, StepOutcome

OUTPUT_REF_BYTES = 16_384
"""A step output larger than this (as JSON) is stored once and carried by reference."""


class StoreOutputInput(BaseModel):
    ref: str
    """Chosen by the workflow (chain, round, step): a retry stores the same row once."""
    tenant: str
    workflow_id: str
    step_id: str
    output: Any


class CombineOutputsInput(BaseModel):
    """Concatenate the lists stored under `parts` into one list stored under `ref`."""

    ref: str
    tenant: str
    workflow_id: str
    step_id: str
    parts: list[str] = Field(max_length=500)


class LoadOutputsInput(BaseModel):
    refs: list[str] = Field(max_length=500)


class LoadedOutputs(BaseModel):
    outputs: dict[str, Any]


class FanOutInput(BaseModel):
    """One part of a large `for_each` step, run by a child workflow of its own."""

    step_id: str
    tool: str
    calls: list[dict[str, Any]] = Field(max_length=500)
    first_index: int = 0
    """Position of `calls[0]` in the whole step (errors name the element)."""
    actor: dict[str, Any]
    task_queue: str
    max_concurrency: int = Field(ge=1, le=64)
    ref: str
    """Where this part's outputs are stored (a list, in element order)."""
    tenant: str


class FanOutResult(BaseModel):
    ref: OutputRef | None = None
    error: StepError | None = None
    """The first element that failed (the part's outputs are then not stored)."""


def resolve_refs(steps: Sequence[StepOutcome], outputs: Mapping[str, Any]) -> list[StepOutcome]:
    """`steps` with each output kept by reference put back from `outputs` (by ref)."""
    resolved = []
    for step in steps:
        ref = output_ref(step)
        if ref is not None and ref in outputs:
            step = step.model_copy(update={"output": outputs[ref]})
        resolved.append(step)
    return resolved


def output_ref(step: StepOutcome) -> str | None:
    return step.output_ref.ref if step.output_ref is not None else None
