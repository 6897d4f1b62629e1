"""A decision sent while the run's workflow task is failing (the server's `WorkflowNotReady`,
seen while a run moves to another release) is tried again under one update id, for a
bounded time; any other refusal reaches the caller at once."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.any_pb2 import Any as AnyProto
from google.rpc.status_pb2 import Status
from temporalio.service import RPCError, RPCStatusCode

from agentkeel.client import approvals
from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision

DECISION = ApprovalDecision(approved=True, approver="bob", reason="ok", approval_id=1)
NOT_READY = "type.googleapis.com/temporal.api.errordetails.v1.WorkflowNotReadyFailure"


def _refusal(status: RPCStatusCode, detail_type: str) -> RPCError:
    raw = Status(code=int(status), details=[AnyProto(type_url=detail_type)])
    return RPCError("refused", status, raw.SerializeToString())


class _Handle:
    """Refuses the first `refusals` updates, then answers; records each try's update id."""

    def __init__(self, *refusals: RPCError) -> None:
        self.refusals = list(refusals)
        self.update_ids: list[str] = []

    async def execute_update(self, _name: str, decision: ApprovalDecision, **kw: Any) -> Any:
        self.update_ids.append(kw["id"])
        if self.refusals:
            raise self.refusals.pop(0)
        assert decision.approval_id is not None
        return ApprovalAnswer(
            approval_id=decision.approval_id,
            step_id="s1",
            call_id="c1",
            tool="create_refund",
            approved=decision.approved,
            approver=decision.approver,
        )


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_sleep(_: float) -> None:
        return None

    monkeypatch.setattr(approvals.asyncio, "sleep", no_sleep)


async def test_a_decision_waits_out_a_run_that_is_not_ready_under_one_update_id() -> None:
    not_ready = _refusal(RPCStatusCode.FAILED_PRECONDITION, NOT_READY)
    handle = _Handle(not_ready, not_ready)
    answer = await approvals._decide_when_ready(handle, DECISION)  # type: ignore[arg-type]
    assert answer.approved and answer.approval_id == 1
    assert len(handle.update_ids) == 3 and len(set(handle.update_ids)) == 1


async def test_another_refusal_reaches_the_caller_at_once() -> None:
    other = _refusal(RPCStatusCode.FAILED_PRECONDITION, "type.googleapis.com/other.Failure")
    handle = _Handle(other)
    with pytest.raises(RPCError):
        await approvals._decide_when_ready(handle, DECISION)  # type: ignore[arg-type]
    assert len(handle.update_ids) == 1


async def test_a_run_that_stays_not_ready_is_refused_after_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(approvals, "NOT_READY_WAIT_S", 1.0)
    not_ready = _refusal(RPCStatusCode.FAILED_PRECONDITION, NOT_READY)
    handle = _Handle(*[not_ready] * 100)
    clock = iter(float(t) for t in range(1000))
    monkeypatch.setattr(approvals.time, "monotonic", lambda: next(clock))
    with pytest.raises(RPCError):
        await approvals._decide_when_ready(handle, DECISION)  # type: ignore[arg-type]
    assert 1 <= len(handle.update_ids) < 100
