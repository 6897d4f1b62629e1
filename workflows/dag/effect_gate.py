"""What a side effect passes before its call starts: provenance, its key, approval.

Every side-effecting call of every plan goes through `clear_effect`, whoever planned it:

1. provenance: its target (`identity_args`) and amount (`amount_arg`) must come from the
   request, its actor or a trusted lookup (`schemas.plan.provenance`); otherwise it is
   refused with `UntrustedArgument`, or, where the domain says so, sent to an approver who
   sees where each value came from;
2. its idempotency key names the request (or the run chain) and what the effect changes
   (tool, identity arguments, amount), never a step id or the order of dispatch: a
   renamed step, a reordered plan or a replan cannot make the same effect twice;
3. the ledger: it is claimed (`workflows.dag.effect_ledger`), and what its actor and its
   target moved in the domain's window, across runs, counts toward the thresholds;
4. approval: when the tool always needs one, or the money moved passes the thresholds.

Refusals, decisions and how each call ended are recorded in the ledger (the audit trail).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow

from agentkeel.schemas import errors
from agentkeel.schemas.actor import SYSTEM_ROLE, Actor
from agentkeel.schemas.approvals import ApprovalPolicy, ApprovalRecord, ApprovalRequest
from agentkeel.schemas.effects import EffectStatus
from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.plan.provenance import (
    READS_AMENDED,
    READS_AS_ASKED,
    READS_ASIDES,
    READS_TARGETS,
)
from agentkeel.schemas.result import StepError
from agentkeel.schemas.tools import ToolSpec
from agentkeel.sdk.serving import active_domain
from agentkeel.workflows.dag import effect_ledger as ledger
from agentkeel.workflows.dag.authority_check import (
    ROLES_IN_CLAIM_PATCH,
    authority_refusal,
    refused_by_role,
    role_refusal,
)
from agentkeel.workflows.dag.calls import ToolCall
from agentkeel.workflows.dag.effect_ledger import ClearedEffect
from agentkeel.workflows.dag.effect_naming import (
    effect_identity,
    named_values,
    names_every_argument,
    spelling_unambiguous,
)
from agentkeel.workflows.dag.run_context import RunContext
from agentkeel.workflows.dag.tool_activity import StepRefused
from agentkeel.workflows.release import since

EFFECT_RULES_PATCH = "effect-rules-v1"
"""Runs started before it keep the rules they were recorded with (keys by place in the
plan, the planner's intent allowing effects, approvers compared by name, limits per run
without the ledger)."""


PROVENANCE_TARGETS_PATCH = "provenance-asked-v4"
"""Runs started before it read requests as `PROVENANCE_AMENDED_PATCH` recorded: amounts in
any currency, targets of any kind, a looked-up target standing in for the one asked.
Gathered by `release.THIRD_RELEASE_PATCH` (asked at the run's start)."""
PROVENANCE_AMENDED_PATCH = "provenance-asked-v3"
"""Runs started before it read requests as `PROVENANCE_ASIDES_PATCH` recorded
(`TrustedFacts.rules` 3): a corrected amount and a price told of the target asked, and
an amount looked up not paired with its own target."""
PROVENANCE_ASIDES_PATCH = "provenance-asked-v2"
"""Runs started before it read requests as `PROVENANCE_PATCH` recorded (`TrustedFacts.rules`
2): no asides, past or refused askings, amounts not paired with their own targets, a target
looked up by reference not bound to what is asked."""
PROVENANCE_PATCH = "provenance-asked-v1"
"""Runs started before it read requests as they were recorded (`TrustedFacts.rules` 1):
no amounts in words, every number of the request trusted, a lookup's amount trusted where
the request named none, and only declared identity arguments checked."""

CLAIM_RELEASE_PATCH = "claim-release-v1"
"""Runs started before it left the claim of an effect cancelled while it waited open."""
CLAIM_CANCEL_PATCH = "claim-cancel-v1"
"""Runs started before it left open a claim written while the run was being cancelled."""
CLAIM_CANCEL_WAIT_PATCH = "claim-cancel-v2"
"""Runs started before it let a cancel reach the claim's local activity in flight (its
`ActivityError` went past the handler, the claim left open); now the write is shielded
from the cancel, runs to its end, and its claim is then ended."""


async def clear_effect(
    call: ToolCall, spec: ToolSpec, ctx: RunContext, payload: dict[str, Any] | None = None
) -> ClearedEffect:
    """The effect `call` may start as, once it has passed provenance, the tool's authority
    check (`payload`: the call's activity input), the ledger's limits and approval; raises
    `StepRefused` (recorded in the ledger) when it may not run."""
    origins = _origins(call, ctx)
    ctx.effect_origins[call.step_id] = origins
    every_argument = names_every_argument()
    ctx.effects_by_every_argument = every_argument  # handed on to a continued run
    named = named_values(spec, call.args, every_argument=every_argument)
    unambiguous = spelling_unambiguous(named)
    key = ctx.effect_key(
        effect_identity(spec, call.args, every_argument=every_argument, unambiguous=unambiguous)
    )
    request = ledger.claim_of(call, spec, ctx, key, origins)
    untrusted = {name: o for name, o in origins.items() if not o.trusted}
    error = untrusted_refusal(call.tool, call.call_id, untrusted, active_domain().untrusted_effects)
    if error is not None:
        workflow.logger.info("side effect refused: %s %s", error.type, error.message)
        await ledger.record_refusal(request, error)
        raise StepRefused(error)
    # Asked for every effect, whatever the tool's roles: asking only where a tool has
    # roles would make the marker itself depend on the catalog the patch takes out.
    roles_in_claim = since(ROLES_IN_CLAIM_PATCH)
    if roles_in_claim:
        request.allowed_roles = None if spec.roles is None else list(spec.roles)
    if payload is not None:  # ownership and tenant (and, before the patch, the role)
        refused = None if roles_in_claim else role_refusal(spec, ctx.request.actor)
        refused = refused or await authority_refusal(call, spec, payload, key, ctx.tool_queue)
        if refused is not None:
            await ledger.record_refusal(request, refused)
            raise StepRefused(refused)
    # Claimed before any approval: a concurrent run of the same actor or on the same
    # target counts this amount from now on, approved or still waiting.
    to_the_end = since(CLAIM_CANCEL_WAIT_PATCH)
    claiming = ClearedEffect(key=key, claimed=True)
    try:
        async with ctx.effect_claims:
            if to_the_end:
                claimed = await ledger.claim_to_its_end(request, claiming, call)
            else:
                claimed = await ledger.claim(request)
    except asyncio.CancelledError:
        # Cancelled while the claim was being written: it may have been, so it is ended
        # (a no-op where it was not, or where it is another attempt's effect, made).
        if not to_the_end and since(CLAIM_CANCEL_PATCH):
            await ledger.end_cancelled(claiming, call, "being claimed", only_ours=True)
        raise
    if claimed.refused_role is not None:  # recorded by the claim; nothing was claimed
        raise StepRefused(refused_by_role(claimed.refused_role))
    cleared = ClearedEffect(key=key, claimed=True, already_made=claimed.already_made)
    if claimed.already_made:  # the tool answers with the effect it made; nothing moves again
        return cleared
    try:
        cleared.approval = await await_approval(
            call,
            spec,
            ctx,
            origins,
            untrusted=bool(untrusted),
            already=max(ctx.moved_cents, claimed.moved_cents),
        )
    except StepRefused as refused:
        await ledger.settle(
            cleared, EffectStatus.DECLINED, approval=refused.approval, error=refused.error
        )
        raise
    except asyncio.CancelledError:
        # Cancelled while it waited: nothing moved, so its claim ends here rather than
        # counting against the actor and the target for the rest of the window.
        if since(CLAIM_RELEASE_PATCH):
            await ledger.end_cancelled(cleared, call, "it waited for approval")
        raise
    return cleared


def untrusted_refusal(
    tool: str, call_id: str, untrusted: dict[str, ArgumentOrigin], mode: str
) -> StepError | None:
    """The `UntrustedArgument` refusal of a side effect whose target or amount comes from
    untrusted content, where the domain refuses such effects (`mode` "refuse"); None when
    it may go on (all trusted, or sent to an approver instead)."""
    if not untrusted or mode != "refuse":
        return None
    said = "; ".join(f"{name}: {o.says}" for name, o in untrusted.items())
    return StepError(
        type=errors.UNTRUSTED_ARGUMENT,
        message=f"{tool} {call_id} refused: its target or amount does not come from the "
        f"request ({said})",
        non_retryable=True,
    )


def approval_reason(
    spec: ToolSpec,
    policy: ApprovalPolicy,
    actor: Actor,
    amount: int,
    *,
    already: int,
    scoped: bool,
    untrusted: bool,
) -> str | None:
    """Why a side effect waits for an approver (the thresholds, untrusted content, a tool
    that always needs one), or None when it runs at once."""
    why = policy.required_for(actor, amount, already=already, scoped=scoped)
    if why is None and untrusted:
        why = "its target or amount comes from untrusted content (see provenance)"
    if why is None and spec.needs_approval:
        why = f"{spec.name} always needs an approval"
    return why


def _origins(call: ToolCall, ctx: RunContext) -> dict[str, ArgumentOrigin]:
    if ctx.provenance is None:
        return {}
    # The release's id (the fourth's, or the third's) was asked at the run's start; the
    # older ones are asked here, per side effect, only by a run begun before
    # `release-2026-12-06`.
    if since(PROVENANCE_TARGETS_PATCH):
        rules = READS_TARGETS
    elif since(PROVENANCE_AMENDED_PATCH):
        rules = READS_AMENDED
    elif since(PROVENANCE_ASIDES_PATCH):
        rules = READS_ASIDES
    else:
        rules = READS_AS_ASKED if since(PROVENANCE_PATCH) else 1
    provenance = ctx.provenance.under(rules)
    step = provenance.step(call.step_id)
    return provenance.of_call(step, call.args) if step is not None else {}


async def await_approval(
    call: ToolCall,
    spec: ToolSpec,
    ctx: RunContext,
    origins: dict[str, ArgumentOrigin],
    *,
    untrusted: bool = False,
    already: int | None = None,
) -> ApprovalRecord | None:
    """Wait for a decision when the tool always needs one, when a value comes from untrusted
    content (a domain that asks so), or when the money moved is above the thresholds;
    the decision if one was asked; raise if declined.

    `already`: what the actor or the target moved before, in this run and in the ledger's
    window (default: this run's total)."""
    if spec.amount_arg is None and not spec.needs_approval and not untrusted:
        return None
    # The scheduler hands over validated, coerced arguments: an amount is an int here.
    amount = call.args.get(spec.amount_arg) if spec.amount_arg is not None else 0
    if not isinstance(amount, int) or isinstance(amount, bool):
        raise StepRefused(
            _error(
                errors.INVALID_ARGUMENTS,
                f"{call.tool} {call.call_id}: {spec.amount_arg} must be whole cents",
            )
        )
    policy = await ctx.approval_policy()
    domain = active_domain()
    scoped = domain.is_scoped(ctx.request.actor.role)
    before = ctx.moved_cents if already is None else already
    why = approval_reason(
        spec, policy, ctx.request.actor, amount, already=before, scoped=scoped, untrusted=untrusted
    )
    if why is None:
        ctx.moved_cents += amount
        return None
    request = ApprovalRequest(
        step_id=call.step_id,
        call_id=call.call_id,
        tool=call.tool,
        args=call.args,
        amount_cents=amount,
        actor=ctx.request.actor,
        approver_role=next(iter(domain.approver_roles), SYSTEM_ROLE),
        why=why,
        provenance=origins,
    )
    record = await ctx.gate.wait_for(request, timedelta(seconds=policy.timeout_s))
    if record.approved:
        ctx.moved_cents += amount
        return record
    if record.timed_out:
        raise StepRefused(
            _error(
                errors.APPROVAL_TIMED_OUT,
                f"{call.tool} {call.call_id} was declined: no decision in time",
            ),
            approval=record,
        )
    reason = f": {record.reason}" if record.reason else ""
    raise StepRefused(
        _error(
            errors.APPROVAL_DECLINED,
            f"{call.tool} {call.call_id} was rejected by {record.approver}{reason}",
        ),
        approval=record,
    )


def _error(error_type: str, message: str) -> StepError:
    workflow.logger.info("side effect refused: %s %s", error_type, message)
    return StepError(type=error_type, message=message, non_retryable=True)
