"""What every tool call of a run carries besides its arguments: authority, keys, limits.

Built once per run by `AgentWorkflow` and kept in the graph's state (workflow memory):
the actor whose authority the tools enforce, the request id side effects are keyed by,
the side effects the request asked for, the run's limits and tool-call budget, and the
approval gate.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow

from agentkeel.schemas import names
from agentkeel.schemas.approvals import ApprovalPolicy, ApprovalPolicyInput
from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.plan.provenance import Provenance, TrustedFacts
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.usage import RunUsage
from agentkeel.workflows import timeouts
from agentkeel.workflows.approvals import ApprovalGate
from agentkeel.workflows.deadline import Deadline
from agentkeel.workflows.speculation import Speculation
from agentkeel.workflows.waiting import WaitBoard

APPROVAL_POLICY_TIMEOUT = timedelta(seconds=5)


@dataclass
class RunContext:
    tool_queue: str
    request: AgentRequest
    """Its actor, request id and options: whose authority, which keys, what limits."""
    gate: ApprovalGate
    waits: WaitBoard
    """Timers and watches the run waits on, shown in `progress` and the Web UI."""
    authority: bool = True
    """The rules of `AUTHORITY_PATCH` are in force: false only when replaying a run that
    started before them (it keeps the behaviour it was recorded with)."""
    allowed_effects: frozenset[str] = frozenset()
    """Side-effecting tools the request asked for, by the router's reading of it."""
    calls_used: int = 0
    """Tool calls started by earlier planning rounds (against `options.max_tool_calls`)."""
    moved_cents: int = 0
    """Money the run's side effects have been cleared to move so far: thresholds apply to
    the run's total, so splitting a payment into parts never avoids an approval."""
    local_tools: bool = False
    """Its CPU worker hosts the tools: fast reads run as local activities
    (`ToolSpec.local_read`), as the worker said when first offered a policy step."""
    local_policy: bool | None = None
    """This run's policy steps are served by its CPU worker (`activities.local_policy`);
    None until the first step asked; False from the start for a run that predates
    `LOCAL_POLICY_PATCH` (every step on the inference queue, as it was recorded)."""
    effects_by_every_argument: bool | None = None
    """How this run named its side effects (`workflows.dag.effect_naming`); None until its
    first effect. A continued run names them the same way."""
    policy_offer: bool = False
    """The cache lookup's word on where policy steps are served is taken (`policy-offer-v1`,
    asked at the run's start: a patch first asked after a local activity of the same
    workflow task does not replay when a query rebuilds an evicted run)."""
    speculation: Speculation | None = None
    """Reads started while the heavy model planned this round (`workflows.speculation`)."""
    planning: bool = False
    """A planning activity of this run is writing a plan that takes early reads now
    (`workflows.plan_stream`): `plan_step` signals are taken only while this holds."""
    deadline: Deadline | None = None
    """The request's deadline and the trades made for it (`workflows.deadline`)."""
    concurrency: int | None = None
    """The concurrency cap a deadline raised the run's to; None: the request's."""
    stale_ok: bool = False
    """A deadline traded for stale cached reads: tool calls carry `stale_ok`."""
    effect_rules: bool = False
    """The rules of `EFFECT_RULES_PATCH` are in force (`workflows.dag.effect_gate`):
    provenance, keys by what an effect changes, limits across runs, approver identities."""
    caller_plan: bool = False
    """The plan came with the request from a caller allowed to send plans: its literals
    are the caller's own (trusted), not a model's."""
    read_only: bool = False
    """No side effect at all: the request asked so, or a schedule started the run without
    being allowed to make side effects."""
    provenance: Provenance | None = None
    """Where the arguments of the current round's plan came from (`run_plan` sets it)."""
    effect_origins: dict[str, dict[str, ArgumentOrigin]] = field(default_factory=dict)
    """Per side-effecting step of the current round: the origins of its target and amount,
    as the step's outcome reports them."""
    effect_claims: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    """Claims in the effects ledger one at a time, in dispatch order: each of a run's
    parallel side effects counts the ones before it, in the same order on every replay."""
    usage: RunUsage = field(default_factory=RunUsage)
    """What the run's model calls have used so far (`workflows.budget`)."""
    budget_degraded: bool = False
    """The run's budget sent its calls to the light tier (`workflows.budget`)."""
    _policy: ApprovalPolicy | None = field(default=None, repr=False)

    async def approval_policy(self) -> ApprovalPolicy:
        """The worker's approval thresholds, read once per run and recorded in its history."""
        if self._policy is None:
            self._policy = await workflow.execute_local_activity(
                names.APPROVAL_POLICY,
                ApprovalPolicyInput(tenant=self.request.tenant),
                result_type=ApprovalPolicy,
                start_to_close_timeout=APPROVAL_POLICY_TIMEOUT,
                retry_policy=timeouts.STORE_RETRY,
            )
        return self._policy

    def trusted_facts(self) -> TrustedFacts:
        """What this run trusts as given: the request's words, the actor, a caller's plan."""
        return TrustedFacts(
            text=self.request.question,
            subject=self.request.actor.subject,
            caller_plan=self.caller_plan,
        )

    def effect_key(self, effect: str) -> str:
        """The key of the side effect `effect` (`issue_credit:account_id=7:amount_cents=500`)
        of this request, or of this run chain when the request has no id: the same whatever
        step makes it, in whatever order, in whichever planning round."""
        request = self.request
        if request.request_id is not None:
            return request_idempotency_key(
                request.tenant, request.actor.audience, request.request_id, effect
            )
        return idempotency_key(workflow.info().first_execution_run_id, effect)

    def idempotency_key(self, role: str, call_id: str) -> str:
        """The key of a side effect with role `role` in the plan and id `call_id`."""
        request = self.request
        if request.request_id is not None:
            return request_idempotency_key(
                request.tenant, request.actor.audience, request.request_id, role
            )
        return idempotency_key(workflow.info().first_execution_run_id, call_id)


def idempotency_key(first_run_id: str, call_id: str) -> str:
    """Without a request id: the same for every retry of one call of one run chain.

    It names the run chain (the first run id survives retries, continue-as-new and reset)
    and the call, not the workflow id: with coalescing, workflow ids are derived from the
    question, and the same question asked again tomorrow must make its effect again.
    """
    return f"{first_run_id}/{call_id}"


def request_idempotency_key(tenant: str, audience: str, request_id: str, role: str) -> str:
    """With a request id: the same for every run of the same request by the same audience.

    It names the request and what the call does (`close_ticket:ticket_id=7#0`: the tool,
    the row it changes, and how many such calls came before it in the plan), not step ids,
    plan order or runs, so a replan or the same request sent again finds the effect already
    made. The audience is part of it: another subject reusing the id is another request.
    """
    return f"req/{tenant}/{audience}/{request_id}/{role}"
