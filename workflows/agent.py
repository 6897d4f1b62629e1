"""`AgentWorkflow`: one durable agent run. The public entry point of agentkeel."""

from __future__ import annotations

from typing import Any, cast

from temporalio import workflow
from temporalio.exceptions import ApplicationError, is_cancelled_exception

from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.continuation import Continuation
from agentkeel.schemas.names import (
    AGENT_WORKFLOW,
    APPROVE_UPDATE,
    OVERFLOW_SLOT_SIGNAL,
    PLAN_STEP_SIGNAL,
    PROGRESS_QUERY,
    SLOT_WAIT_SIGNAL,
    TOOL_PROGRESS_SIGNAL,
)
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.queues import inference_queue
from agentkeel.schemas.result import AgentResult, CacheStatus, Timings
from agentkeel.schemas.search_attributes import TEMPORAL_SCHEDULED_BY_ID
from agentkeel.schemas.speculation import PlanSteps
from agentkeel.schemas.tools.downstreams import SlotWait, ToolProgress
from agentkeel.workflows.approvals import ApprovalGate
from agentkeel.workflows.cancellation import announce_cancellation
from agentkeel.workflows.dag.effect_gate import EFFECT_RULES_PATCH
from agentkeel.workflows.dag.effect_naming import handed_on_memo
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.graph import AGENT_GRAPH, compiled_graph
from agentkeel.workflows.inputs import one_input
from agentkeel.workflows.nodes.cache_lookup import POLICY_OFFER_PATCH
from agentkeel.workflows.nodes.run_record import record_cancelled_run
from agentkeel.workflows.overflow_gate import OverflowGate
from agentkeel.workflows.plan_stream import take
from agentkeel.workflows.release import RELEASE_PATCH, since
from agentkeel.workflows.request_checks import check_request
from agentkeel.workflows.run_inputs import parse_continuation, parse_request
from agentkeel.workflows.state import AgentState
from agentkeel.workflows.visibility import start_attributes
from agentkeel.workflows.waiting import WaitBoard

WORKFLOW_NAME = AGENT_WORKFLOW
# Each run may loop plan → execute → join a few times; LangGraph counts every node.
RECURSION_LIMIT = 64


LOCAL_POLICY_PATCH = "local-policy-v1"
"""Policy steps offered to the CPU worker first (`activities.local_policy`). Asked at the
start of the run, before any local activity: first asked after the cache lookup's local
activity in the same workflow task, its marker did not replay when a query made the
worker rebuild an evicted run (a nondeterminism error on the query)."""

TENANT_ATTRIBUTE_PATCH = "tenant-attribute-v1"
"""The run's tenant as the `AgentTenant` search attribute, set at its start."""

AUTHORITY_PATCH = "authority-v1"
"""Actors, strict input checks, plan limits, side effects only when asked, approvals and
cancellation of calls in flight. A run whose history predates it replays as it ran."""


@workflow.defn(name=WORKFLOW_NAME)
class AgentWorkflow:
    """Runs the agent graph for one `AgentRequest` (as JSON) and returns an `AgentResult`."""

    def __init__(self) -> None:
        self._progress = RunProgress()
        self._gate = ApprovalGate(self._progress)
        self._waits = WaitBoard(self._progress)
        self._overflow = OverflowGate(self._progress)
        self._context: RunContext | None = None

    @workflow.query(name=PROGRESS_QUERY)
    def progress(self) -> RunProgress:
        """Stage, route, live step outcomes and any pending approval, for ops and dashboards."""
        return self._progress

    @workflow.signal(name=SLOT_WAIT_SIGNAL)
    def slot_wait(self, *inputs: Any) -> None:
        """One input, `SlotWait`: a tool call of this run waits for a downstream slot (or
        got one), shown in `progress.waiting` and as the step's `queued_ms`."""
        # Decoded here (`workflows.inputs`): a signal of another shape, or with another
        # number of arguments, is dropped with a warning instead of failing the workflow
        # task for good. A signal cannot answer its sender, so a log is all it gets.
        try:
            note = one_input(inputs, SlotWait, SLOT_WAIT_SIGNAL)
        except ApplicationError as exc:
            workflow.logger.warning("%s signal dropped: %s", SLOT_WAIT_SIGNAL, exc.message)
            return
        self._waits.slot(note)

    @workflow.signal(name=OVERFLOW_SLOT_SIGNAL)
    def overflow_slot(self, *_: Any) -> None:
        """A run that ended handed this one its overflow slot: look again (a wake-up only;
        the slot itself is counted in Redis, so anyone's signal lets no run past the gate)."""
        self._overflow.wake()

    @workflow.signal(name=TOOL_PROGRESS_SIGNAL)
    def tool_progress(self, *inputs: Any) -> None:
        """One input, `ToolProgress`: a tool call of this run says how far it is, shown on
        its step as `reported` (a signal of another shape is dropped, as `slot_wait`'s)."""
        try:
            note = one_input(inputs, ToolProgress, TOOL_PROGRESS_SIGNAL)
        except ApplicationError as exc:
            workflow.logger.warning("%s signal dropped: %s", TOOL_PROGRESS_SIGNAL, exc.message)
            return
        step_id = note.call_id.split("[", 1)[0]
        for step in self._progress.steps:
            if step.id == step_id and step.attempt == self._progress.replans:
                step.reported = note.describe()

    @workflow.signal(name=PLAN_STEP_SIGNAL)
    def plan_step(self, *inputs: Any) -> None:
        """One input, `PlanSteps`: reads the planner has written, which the run may start
        before the plan is whole (`workflows.plan_stream` decides; any other shape is
        dropped, as `slot_wait`'s)."""
        try:
            steps = one_input(inputs, PlanSteps, PLAN_STEP_SIGNAL)
        except ApplicationError as exc:
            workflow.logger.warning("%s signal dropped: %s", PLAN_STEP_SIGNAL, exc.message)
            return
        for call in steps.calls:
            take(self._context, call)

    @workflow.update(name=APPROVE_UPDATE)
    async def approve(self, *inputs: Any) -> ApprovalAnswer:
        """One input, `ApprovalDecision`: approve or reject the side effect this run waits
        for (see `progress.awaiting`)."""
        return self._gate.decide(one_input(inputs, ApprovalDecision, APPROVE_UPDATE))

    @approve.validator
    def _validate_approve(self, *inputs: Any) -> None:
        # Rejected updates never reach history: a decision of another shape (named as
        # `InvalidRequest`), a second decision, or one with nothing pending is refused here
        # with the reason.
        self._gate.check(one_input(inputs, ApprovalDecision, APPROVE_UPDATE))

    @workflow.run
    async def run(self, *inputs: Any) -> AgentResult:
        """One input: `AgentRequest` JSON (a model instance from Python callers works too)."""
        authority = since(AUTHORITY_PATCH)
        request = parse_request(inputs, strict=authority)
        # Subject patterns came with this release: a run recorded before replays unchecked.
        check_request(request, subject_patterns=since(RELEASE_PATCH))
        carried = parse_continuation(inputs)
        if since(TENANT_ATTRIBUTE_PATCH):
            workflow.upsert_search_attributes(start_attributes(request))
        queue = workflow.info().task_queue
        state: AgentState = {
            "request": request,
            "started_at": workflow.now(),
            # Derived, so a deployment on queue X pairs with inference queue X-inference.
            "inference_queue": inference_queue(queue),
            "steps": [],
            "replans": 0,
            "warnings": [],
            "progress": self._progress,
            "context": RunContext(
                tool_queue=queue,
                request=request,
                gate=self._gate,
                waits=self._waits,
                authority=authority,
                local_policy=None if since(LOCAL_POLICY_PATCH) else False,
                policy_offer=since(POLICY_OFFER_PATCH),
            ),
        }
        self._context = state["context"]
        if authority and since(EFFECT_RULES_PATCH):
            self._effect_rules(state["context"])
        if carried is not None:
            self._pick_up(state, carried)
        app = compiled_graph(AGENT_GRAPH)
        try:
            await self._overflow.enter(continued=carried is not None)  # (asks its id first)
            final = await app.ainvoke(state, config={"recursion_limit": RECURSION_LIMIT})
        except BaseException as exc:
            if authority and is_cancelled_exception(exc):
                self._progress.stage = "cancelled"
                # What ran before the cancel is recorded (a refund that had committed,
                # its approval), and the token stream tells readers to stop waiting.
                await record_cancelled_run(state, self._progress)
                await announce_cancellation(continued=bool(self._progress.continued))
            raise
        finally:
            await self._overflow.leave()
        if final.get("suspended"):
            self._hand_on(cast(AgentState, final))
        self._progress.stage = "done"
        return final["result"]

    def _effect_rules(self, context: RunContext) -> None:
        """Provenance, keys by effect, approver identities, and schedules read-only unless
        created with side effects allowed (`workflows.dag.effect_gate`)."""
        request = context.request
        context.effect_rules = True
        context.caller_plan = request.plan is not None  # (`check_request` allowed it)
        self._gate.identities = True
        scheduled = workflow.info().typed_search_attributes.get(TEMPORAL_SCHEDULED_BY_ID)
        context.read_only = scheduled is not None and not request.options.scheduled_effects

    def _pick_up(self, state: AgentState, carried: Continuation) -> None:
        """Continue the run `carried` describes: its plan runs on from where it stopped."""
        context = state["context"]
        context.calls_used, context.moved_cents = carried.calls_used, carried.moved_cents
        context.usage = carried.usage or context.usage
        context.allowed_effects = frozenset(carried.allowed_effects)
        if context.local_policy is None:  # (False: a chain that predates local-policy-v1)
            context.local_policy = carried.local_policy
        self._progress.approvals = list(carried.approvals)
        self._progress.continued = carried.continued
        self._progress.route = carried.route
        state.update(
            {
                "resume": True,
                "given": state["request"].plan is not None,
                "started_at": carried.started_at,
                "route": carried.route,
                "cache": carried.cache,
                "cache_match": carried.cache_match,
                "plan": carried.plan,
                "steps": carried.steps,
                "plan_error": carried.plan_error,
                "replans": carried.replans,
                "timings": carried.timings,
                "warnings": carried.warnings,
            }
        )
        if carried.speculation is not None:
            state["speculation"] = carried.speculation

    def _hand_on(self, final: AgentState) -> None:
        """Continue as new with the same workflow id: a fresh history, the same run."""
        context = final["context"]
        carried = Continuation(
            from_run_id=workflow.info().run_id,
            started_at=final["started_at"],
            route=final["route"],
            cache=final.get("cache", CacheStatus.MISS),
            cache_match=final.get("cache_match"),
            plan=final["plan"],
            steps=final.get("steps", []),
            plan_error=final.get("plan_error"),
            replans=final.get("replans", 0),
            calls_used=context.calls_used,
            moved_cents=context.moved_cents,
            allowed_effects=sorted(context.allowed_effects),
            timings=final.get("timings", Timings()),
            warnings=final.get("warnings", []),
            approvals=list(self._progress.approvals),
            continued=self._progress.continued + 1,
            local_policy=context.local_policy,
            speculation=final.get("speculation"),
            usage=context.usage,
        )
        workflow.logger.info("continuing as new (%d)", carried.continued)
        workflow.continue_as_new(
            args=[final["request"].model_dump(mode="json"), carried.model_dump(mode="json")],
            memo=handed_on_memo(context.effects_by_every_argument),
        )
