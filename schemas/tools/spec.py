"""What the catalog says about each tool: `ToolSpec`, and the base of every tool's arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentkeel.schemas.actor import Actor
from agentkeel.schemas.errors import NOT_AUTHORIZED, NOT_FOUND
from agentkeel.schemas.text import Identifier
from agentkeel.schemas.tools.downstreams import Downstream

Render = Callable[[dict[str, Any]], str]
"""Plain-language sentence(s) for one result of a tool (as JSON), in the domain's words."""


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown arguments are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ActorScoped(BaseModel):
    """What every tool activity receives besides the plan's arguments."""

    actor: Actor | None = None
    """Whose authority the call carries, set by the workflow from the request and never by a
    plan (plan arguments forbid it). None: a trusted caller (histories from before actors)."""
    tenant: Identifier = "default"
    """The request's tenant, set by the workflow and never by a plan: whose data the call
    reads and changes. Calls scheduled before tenants travelled read `default`."""
    call_id: str | None = None
    """The run's name for this call (`s2[3]`), set by the workflow: what a wait for a
    downstream slot is reported against."""
    fresh: bool = False
    """Read the source, not the tool-result cache: set for the runs of a watched step,
    which exist to see a change (what they read is still stored for others)."""
    stale_ok: bool = False
    """A result past its TTL, inside its stale-while-revalidate window, may serve this call:
    set by a run that traded for it to meet its deadline. Counts only where the workers
    serve stale results to deadline runs alone (`AGENTKEEL_TOOL_CACHE_STALE=deadline`);
    by default every run may be served them."""
    authorize_only: bool = False
    """Set by the workflow for a side effect whose tool declares `authorize`: run only that
    check of the call's authority (ownership, tenant), before anything is claimed or asked;
    the effect is made by a call of its own, later."""


RESERVED_ARGUMENTS = frozenset({*ActorScoped.model_fields, "idempotency_key"})

LOCAL_READ_MS = 1000
"""A read expected within this runs as a local activity (`ToolSpec.local`): the task-queue
round trip it saves (two hops and a workflow task) is a large part of a fast read."""
LOCAL_READ_TIMEOUT = timedelta(seconds=30)
"""...and only with an attempt timeout this short: the workflow task waits for it."""
"""Names a tool's own arguments may not take: the workflow sets these beside the plan's
arguments (`sdk.decorator` refuses them when a tool is defined)."""


def money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


@dataclass(frozen=True)
class ToolSpec:
    """Everything the scheduler, the activities and the policies need to know about a tool."""

    name: str
    description: str
    args_model: type[BaseModel]
    result_model: type[BaseModel]
    timeout: timedelta = timedelta(seconds=10)
    max_attempts: int = 3
    idempotent: bool = True
    """Safe to retry and to cache; false means side-effecting (needs an idempotency key)."""
    cache_ttl: timedelta | None = None
    max_concurrency: int | None = None
    """Per-tool cap within one run, on top of the run's cap."""
    expected_ms: int = 20
    """Typical latency, used to weigh the critical path when a cap holds steps back."""
    input_model: type[BaseModel] | None = None
    """What the activity receives: the arguments plus `ActorScoped` (and, for a side effect,
    its idempotency key)."""
    identity_args: tuple[str, ...] = ()
    """For a side effect: the arguments that say which row it changes (`invoice_id`); with a
    request id, its idempotency key names them instead of the step's place in the plan."""
    trusted_fields: tuple[str, ...] = ()
    """Result fields (dotted paths, `*` for any list index: `lines.*.account_id`) that are as
    trustworthy as the arguments the call was made with: a row's owner or total looked up
    by its id. A side effect's target or amount may come from such a field of a call whose
    own arguments are trusted (`schemas.plan.provenance`); any other tool output is
    untrusted content."""
    needs_approval: bool = False
    """A side effect every call of which waits for an approver, whatever it moves."""
    asked_by: tuple[str, ...] = ()
    """For a side effect: the words (or starts of words) with which a request asks for it
    ("refund", "money back", "reimburs"). Its target and amount must be what a request
    asks with one of them, not numbers it merely mentions elsewhere
    (`schemas.plan.asked`); none: any sentence of the request may ask for it."""
    amount_arg: str | None = None
    """The argument holding money this tool moves, in cents: above the approval thresholds
    the run waits for an approver before the call."""
    amount_currency: str | None = None
    """The currency of `amount_arg`'s cents (ISO 4217, "USD"): an amount a request writes in
    another ("5€", "GBP 5") is not one it asks this tool to move. None: not known (any
    amount written as money counts)."""
    non_retryable_errors: tuple[str, ...] = field(default=(NOT_FOUND, NOT_AUTHORIZED))
    downstream: Downstream | None = None
    """The service each call loads (capped across all runs and workers); None: none (a
    built-in)."""
    batch: bool = False
    """Calls arriving together (from one run or many) may go as one request: the activity
    class serves a `<name>_many` method (see `activities/downstream/`)."""
    local: bool | None = None
    """Run as a local activity of the worker that runs the workflow (no task-queue round
    trip) where that worker hosts the tools: None decides by the tool (a read expected
    within `LOCAL_READ_MS`); False: always a task-queue activity; True: any read."""
    runs_in_workflow: bool = False
    """A built-in the workflow runs itself (the `wait` timer): no activity, no downstream,
    never cached or repeated."""
    speculate_arg: str | None = None
    """The one argument the router's reading of a request can fill (`ticket_id`): with it,
    an idempotent tool with a cache TTL may be started speculatively while the heavy model
    plans (`schemas.speculation`)."""
    render: Render | None = field(default=None, compare=False)
    """How answers describe one result of this tool; None: its JSON as it is."""
    roles: tuple[str, ...] | None = None
    """The actor roles that may call it (an MCP server's `roles`); None: every role. For a
    side effect the workflow checks it before the effect is claimed or put to an approver;
    the call checks it again."""
    authorize: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    """For a side effect: `async (args, ctx) -> None`, raising `NotAuthorized` or
    `NotFound` where the actor may not make it (a row of another owner or tenant); run
    by the workflow before it claims the effect or asks an approver."""
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    """The tool's own function (`agentkeel.tool`): `async (args[, ctx]) -> result`."""
    many: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    """For a `batch` tool: `async (calls: Sequence[ToolCall]) -> list[result | error]`."""
    takes_context: bool = field(default=False, compare=False)
    """Whether `fn` takes a `ToolContext` as its second argument."""

    @property
    def local_read(self) -> bool:
        """A read that may run as a local activity (`local`): retried from scratch on the
        next workflow task if its worker dies, which only a read may be."""
        if not self.idempotent or self.runs_in_workflow or self.local is False:
            return False
        if self.local:
            return True
        return self.expected_ms <= LOCAL_READ_MS and self.timeout <= LOCAL_READ_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError(f"{self.name}: max_concurrency must be at least 1")
        if self.speculate_arg is not None and not (self.idempotent and self.cache_ttl):
            raise ValueError(f"{self.name}: only a cached, idempotent read may be speculated")
        if self.needs_approval and self.idempotent:
            raise ValueError(f"{self.name}: only a side effect waits for approval")
        if self.batch and self.fn is not None and self.many is None:
            raise ValueError(f"{self.name}: a batch tool needs its `many` function")

    def checked_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """`args` checked by the tool's model, in the form a call's arguments take once
        resolved (`"15000"` is 15000, defaults left out): two calls with equal checked
        arguments are the same call.

        Raises:
            pydantic.ValidationError: the tool refuses them.
        """
        checked: dict[str, Any] = self.args_model.model_validate(dict(args)).model_dump(
            mode="json", exclude_unset=True
        )
        return checked

    @property
    def activity_input_model(self) -> type[BaseModel]:
        return self.input_model or self.args_model
