"""What a request must satisfy in the served domain before anything of it runs.

The request's model checks its shape; these check it against the domain: the actor's
role is one of the domain's, a scoped role names its subject, and a plan the request
brings is valid in the catalog and may carry side effects only from a role the domain
lets send them. A request that fails any of them fails the run at once, non-retryable,
naming what was wrong: nothing runs, nothing is written.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from agentkeel.schemas.actor import SYSTEM_ROLE
from agentkeel.schemas.errors import INVALID_REQUEST, NOT_AUTHORIZED
from agentkeel.schemas.plan.references import PlanValidationError
from agentkeel.schemas.plan.validation import validate_plan
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.tools.catalog import SIDE_EFFECT_TOOLS, TOOLS
from agentkeel.sdk.serving import active_domain


def check_request(request: AgentRequest, *, subject_patterns: bool = True) -> None:
    """Raise a non-retryable `ApplicationError` for a request the domain cannot serve
    (`subject_patterns`: whether the roles' subject patterns are checked; see
    `Domain.actor_problem`)."""
    domain = active_domain()
    actor = request.actor
    problem = domain.actor_problem(actor.role, actor.subject, subject_patterns=subject_patterns)
    if problem is not None:
        raise _refused(INVALID_REQUEST, problem)
    role = domain.role(actor.role)
    assert role is not None
    if request.options.scheduled_effects and not (actor.role == SYSTEM_ROLE or role.may_approve):
        raise _refused(
            NOT_AUTHORIZED,
            f"{actor.describe()} may not let a schedule make side effects "
            "(only a role that may approve, or system)",
        )
    if request.plan is None:
        return
    try:
        validate_plan(request.plan, TOOLS)
    except PlanValidationError as exc:
        raise _refused(INVALID_REQUEST, f"plan: {exc.kind}: {exc.message}") from None
    effects = [s for s in request.plan.steps if s.tool in SIDE_EFFECT_TOOLS]
    if effects and not role.may_send_plans:
        listed = ", ".join(f"{s.id} ({s.tool})" for s in effects)
        raise _refused(
            NOT_AUTHORIZED,
            f"{actor.describe()} may not send a plan with side effects (steps {listed})",
        )


def _refused(error_type: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=error_type, non_retryable=True)
