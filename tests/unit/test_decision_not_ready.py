"""A decision sent while the run's workflow task is failing (the server's `WorkflowNotReady`,
seen while a run moves to another release) is tried again under one update id, for a
bounded time, its progress query too; any other refusal reaches the caller at once."""

from __future__ import annotations

from types import SimpleNamespace
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


class _Run:
    """A run waiting for approval 1 whose query and update are refused `refusals` times
    each before they answer; records each update try's id."""

    def __init__(self, *refusals: RPCError) -> None:
        self.query_refusals = list(refusals)
        self.update_refusals = list(refusals)
        self.queries = 0
        self.update_ids: list[str] = []

    def get_workflow_handle(self, _workflow_id: str, run_id: str | None = None) -> _Run:
        return self

    async def describe(self) -> Any:
        return SimpleNamespace(run_id="run-1")

    async def query(self, _name: str, **_: Any) -> Any:
        self.queries += 1
        if self.query_refusals:
            raise self.query_refusals.pop(0)
        return SimpleNamespace(refuse_decision=lambda approval_id: None)

    async def execute_update(self, _name: str, decision: ApprovalDecision, **kw: Any) -> Any:
        self.update_ids.append(kw["id"])
        if self.update_refusals:
            raise self.update_refusals.pop(0)
        assert decision.approval_id is not None
        return ApprovalAnswer(
            approval_id=decision.approval_id,
            step_id="s1",
            call_id="c1",
            tool="create_refund",
            approved=decision.approved,
            approver=decision.approver,
        )


async def _decide(run: _Run) -> ApprovalAnswer:
    return await approvals.decide_approval(run, "wf-1", DECISION)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_sleep(_: float) -> None:
        return None

    monkeypatch.setattr(approvals.asyncio, "sleep", no_sleep)


async def test_a_decision_waits_out_a_run_that_is_not_ready_under_one_update_id() -> None:
    not_ready = _refusal(RPCStatusCode.FAILED_PRECONDITION, NOT_READY)
    run = _Run(not_ready, not_ready)
    answer = await _decide(run)
    assert answer.approved and answer.approval_id == 1
    assert run.queries == 3, "the progress query waited too"
    assert len(run.update_ids) == 3 and len(set(run.update_ids)) == 1


async def test_another_refusal_reaches_the_caller_at_once() -> None:
    other = _refusal(RPCStatusCode.FAILED_PRECONDITION, "type.googleapis.com/other.Failure")
    run = _Run(other)
    with pytest.raises(RPCError):
        await _decide(run)
    assert run.queries == 1 and not run.update_ids


async def test_a_run_that_stays_not_ready_is_refused_after_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(approvals, "NOT_READY_WAIT_S", 5.0)
    not_ready = _refusal(RPCStatusCode.FAILED_PRECONDITION, NOT_READY)
    run = _Run(*[not_ready] * 100)
    clock = iter(float(t) for t in range(1000))
    monkeypatch.setattr(approvals.time, "monotonic", lambda: next(clock))
    with pytest.raises(RPCError):
        await _decide(run)
    assert 1 <= run.queries < 100 and not run.update_ids
