"""What names a side effect (its key, its approval) and which approval a decision decides."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from agentkeel.schemas import errors
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.approvals import ApprovalRecord, ApprovalRequest
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.tools import TOOLS, ToolSpec
from agentkeel.workflows.dag.effect_naming import effect_identity


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


def test_two_different_calls_never_share_a_name_once_spelled_unambiguously() -> None:
    """Spelled as they print, these pairs of different calls shared one name, so the second
    of a pair counted as made already and skipped its approval."""
    spec = _spec()
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"to": "bob", "body": "hi:cc=eve"}, {"to": "bob", "body": "hi", "cc": "eve"}),
        ({"a": "x:b=y"}, {"a": "x", "b": "y"}),
        ({"x": None}, {"x": "None"}),
        ({"x": True}, {"x": "True"}),
        ({"x": [1, 2]}, {"x": "[1,2]"}),
        ({"x": {"a": 1}}, {"x": '{"a":1}'}),
        ({"a=b": "c"}, {"a": "b=c"}),
    ]
    for one, other in pairs:
        assert effect_identity(spec, one) == effect_identity(spec, other), "the old spelling"
        named = [effect_identity(spec, args, unambiguous=True) for args in (one, other)]
        assert named[0] != named[1], (one, other)
    # Values that read back as themselves are spelled as before: keys of runs in flight hold.
    plain = {"note": "lunch with Ana", "n": 7, "tags": ["a"], "on": False}
    assert effect_identity(spec, plain, unambiguous=True) == effect_identity(spec, plain)
    declared = _spec(identity_args=("note",))
    assert effect_identity(declared, {"note": "a:b"}, unambiguous=True) != effect_identity(
        declared, {"note": "a:c"}, unambiguous=True
    )
    assert effect_identity(declared, {"note": "a", "why": "x:y"}, unambiguous=True) == (
        "delete_note:note=a"
    )


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
