"""What names a side effect (its key, its approval) and which approval a decision decides."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from agentkeel.schemas import errors
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalRecord, ApprovalRequest
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.tools import TOOLS, ToolSpec
from agentkeel.workflows.dag.effect_gate import effect_identity


def _spec(identity_args: tuple[str, ...] = ()) -> ToolSpec:
    refund = TOOLS["create_refund"]
    return dataclasses.replace(
        refund, name="delete_note", identity_args=identity_args, amount_arg=None
    )


def test_without_identity_arguments_every_argument_names_the_effect() -> None:
    spec = _spec()
    a, b = effect_identity(spec, {"note": "a"}), effect_identity(spec, {"note": "b"})
    assert a == "delete_note:note=a" and a != b
    assert effect_identity(spec, {"x": 1, "y": [2]}) == effect_identity(spec, {"y": [2], "x": 1})
    long = effect_identity(spec, {"text": "z" * 500})
    assert long.startswith("delete_note:args#") and len(long) < 80
    # A run recorded before named it by the tool alone.
    assert effect_identity(spec, {"note": "a"}, every_argument=False) == "delete_note"


def test_declared_identity_arguments_name_the_effect_alone() -> None:
    spec = _spec(identity_args=("note",))
    assert effect_identity(spec, {"note": "a", "why": "x"}) == "delete_note:note=a"


def _request(approval_id: int) -> ApprovalRequest:
    return ApprovalRequest(
        step_id="s1",
        call_id=f"s{approval_id}",
        tool="delete_note",
        args={},
        amount_cents=0,
        actor=Actor(role="staff", name="ann"),
        why="always",
        approval_id=approval_id,
    )


def test_a_decision_must_name_the_pending_approval() -> None:
    decided = ApprovalRecord(request=_request(1), approved=True, decided_at=datetime.now(UTC))
    progress = RunProgress(awaiting=_request(2), approvals=[decided])
    assert progress.refuse_decision(2) is None
    kind, message = progress.refuse_decision(None) or ("", "")
    assert kind == errors.APPROVAL_ID_REQUIRED and "approval_id" in message and "2" in message
    assert (progress.refuse_decision(1) or ("",))[0] == errors.APPROVAL_ALREADY_DECIDED
    assert (progress.refuse_decision(3) or ("",))[0] == errors.UNKNOWN_APPROVAL
    assert (progress.refuse_decision(0) or ("",))[0] == errors.UNKNOWN_APPROVAL
    idle = RunProgress(approvals=[decided])
    assert (idle.refuse_decision(1) or ("",))[0] == errors.APPROVAL_ALREADY_DECIDED
    assert (idle.refuse_decision(2) or ("",))[0] == errors.UNKNOWN_APPROVAL


def test_a_cancelled_wait_keeps_its_id_from_being_asked_again() -> None:
    cancelled = ApprovalRecord(
        request=_request(1), approved=False, cancelled=True, decided_at=datetime.now(UTC)
    )
    progress = RunProgress(awaiting=_request(2), approvals=[cancelled])
    kind, message = progress.refuse_decision(1) or ("", "")
    assert kind == errors.APPROVAL_ALREADY_DECIDED and "cancelled" in message
