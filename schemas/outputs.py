"""Inputs of the output-store activities: large step outputs kept by reference."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

OUTPUT_REF_BYTES = 16_384
"""A step output larger than this (as JSON) is stored once and carried by reference."""


class StoreOutputInput(BaseModel):
    ref: str
    """Chosen by the workflow (chain, round, step): a retry stores the same row once."""
    tenant: str
    workflow_id: str
    step_id: str
    output: Any


class LoadOutputsInput(BaseModel):
    refs: list[str] = Field(max_length=500)


class LoadedOutputs(BaseModel):
    outputs: dict[str, Any]
