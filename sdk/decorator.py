"""`agentkeel.tool`: one typed async function becomes a tool of the catalog.

The argument and result models come from the function's signature; the decorator adds
what the scheduler, the caches and the gate need (timeout, retries, cache TTL, side
effect, money argument, downstream, merged calls). The function becomes a Temporal
activity named after the tool (`name`, by default the function's name): that name is a
contract, in every run's history, so rename a tool only together with a new one.

    @agentkeel.tool(cache_ttl=timedelta(seconds=30), downstream=TICKETS_DB)
    async def get_ticket(args: GetTicketArgs, ctx: ToolContext) -> Ticket:
        \"\"\"Get a ticket with its status and assignee.\"\"\"
        ...
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field, create_model

from agentkeel.schemas.errors import NOT_AUTHORIZED, NOT_FOUND
from agentkeel.schemas.tools.downstreams import Downstream
from agentkeel.schemas.tools.spec import RESERVED_ARGUMENTS, ActorScoped, Render, ToolSpec

__all__ = ["ToolDefinitionError", "input_model", "tool"]


class ToolDefinitionError(TypeError):
    """A function cannot be a tool as written; the message says what to change."""


def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: timedelta = timedelta(seconds=10),
    retries: int = 3,
    side_effect: bool = False,
    cache_ttl: timedelta | None = None,
    amount_arg: str | None = None,
    amount_currency: str | None = None,
    needs_approval: bool = False,
    identity_args: Sequence[str] = (),
    trusted_fields: Sequence[str] = (),
    asked_by: Sequence[str] = (),
    authorize: Callable[..., Awaitable[None]] | None = None,
    downstream: Downstream | None = None,
    max_concurrency: int | None = None,
    expected_ms: int = 20,
    many: Callable[..., Any] | None = None,
    speculate_arg: str | None = None,
    non_retryable_errors: Sequence[str] = (NOT_FOUND, NOT_AUTHORIZED),
    render: Render | None = None,
    local: bool | None = None,
) -> Callable[[Callable[..., Any]], ToolSpec]:
    """Make a tool of `async def fn(args: Args[, ctx: ToolContext]) -> Result`.

    Args:
        name: The tool's (and its activity's) name; default: the function's.
        description: What models read about it; default: the docstring's first paragraph.
        timeout: Start-to-close timeout of one attempt.
        retries: Attempts in all (1: never retried).
        side_effect: It changes something: never cached or speculated, given an
            idempotency key (`ctx.idempotency_key`, which it must enforce), allowed only
            when asked, put through approval by `amount_arg`. It heartbeats, so a cancel
            reaches it before its commit: return once the effect has committed.
        cache_ttl: For a read: how long its results are reused (None: never cached).
        amount_arg: The argument holding the money it moves, in cents (for approvals).
        amount_currency: The currency of those cents (ISO 4217: "USD"): a request's
            amount written in another ("5€") is not one it asks this tool to move.
        needs_approval: For a side effect: every call waits for an approver.
        identity_args: For a side effect: the arguments naming the row it changes (its
            key and approval name them; none: every argument does).
        trusted_fields: Result fields (dotted paths, `*` for any list index) as trustworthy
            as the call's arguments: what a row looked up by its id says of itself (its
            owner, its total); all else a tool returns is untrusted content.
        asked_by: Words a request asks for this side effect with ("refund", `asked.py`).
        authorize: For a side effect: `async (args, ctx)` raising `NotAuthorized` or
            `NotFound`, run before anything is claimed or asked (ownership, tenant).
        downstream: The service each call loads (capped across all runs and workers).
        max_concurrency: Calls of this tool in flight at once within one run.
        expected_ms: Typical latency, to weigh the critical path and deadlines.
        many: Serve calls arriving together as one request:
            `async def many(calls: Sequence[ToolCall[Args]]) -> list[Result | Exception]`.
        speculate_arg: For a cached read: the one argument a question's entities fill, so
            it may start while the heavy model plans.
        non_retryable_errors: `ApplicationError` types a retry cannot fix.
        render: How an answer says one result in words (default: its JSON).
        local: For a read: run it as a local activity of the workflow's worker (no
            task-queue hop); None: when `expected_ms` is at most 1 s; False: never.
    """

    if retries < 1:
        raise ToolDefinitionError("retries counts attempts in all: at least 1")
    if side_effect and cache_ttl is not None:
        raise ToolDefinitionError("a side effect is never cached: drop cache_ttl")
    if amount_currency is not None and not re.fullmatch(r"[A-Z]{3}", amount_currency):
        raise ToolDefinitionError(
            f"amount_currency must be an ISO 4217 code such as 'USD', got {amount_currency!r}"
        )
    if amount_currency is not None and amount_arg is None:
        raise ToolDefinitionError("amount_currency says what amount_arg holds: name amount_arg")
    declared = dict(locals())  # the parameters, as given: `_Declared` has one field each
    for listed in ("identity_args", "trusted_fields", "asked_by", "non_retryable_errors"):
        declared[listed] = tuple(declared[listed])
    return _Declared(**declared)


@dataclass(frozen=True)
class _Declared:
    """What `tool(...)` was told (its parameters, documented there), waiting for the
    function it decorates: called with it, the tool's `ToolSpec`."""

    name: str | None
    description: str | None
    timeout: timedelta
    retries: int
    side_effect: bool
    cache_ttl: timedelta | None
    amount_arg: str | None
    amount_currency: str | None
    needs_approval: bool
    identity_args: tuple[str, ...]
    trusted_fields: tuple[str, ...]
    asked_by: tuple[str, ...]
    authorize: Callable[..., Awaitable[None]] | None
    downstream: Downstream | None
    max_concurrency: int | None
    expected_ms: int
    many: Callable[..., Any] | None
    speculate_arg: str | None
    non_retryable_errors: tuple[str, ...]
    render: Render | None
    local: bool | None

    def __call__(self, fn: Callable[..., Any]) -> ToolSpec:
        args_model, result_model, takes_context = _signature(fn)
        tool_name = self.name or fn.__name__
        activity_input = input_model(tool_name, args_model, side_effect=self.side_effect)
        for path in self.trusted_fields:
            _check_result_path(tool_name, result_model, path)
        return ToolSpec(
            name=tool_name,
            description=self.description or _first_paragraph(fn) or tool_name,
            args_model=args_model,
            result_model=result_model,
            timeout=self.timeout,
            max_attempts=self.retries,
            idempotent=not self.side_effect,
            cache_ttl=None if self.side_effect else self.cache_ttl,
            max_concurrency=self.max_concurrency,
            expected_ms=self.expected_ms,
            input_model=activity_input,
            identity_args=self.identity_args,
            trusted_fields=self.trusted_fields,
            asked_by=self.asked_by,
            authorize=self.authorize,
            amount_arg=self.amount_arg,
            amount_currency=self.amount_currency,
            needs_approval=self.needs_approval,
            non_retryable_errors=self.non_retryable_errors,
            downstream=self.downstream,
            batch=self.many is not None,
            speculate_arg=self.speculate_arg,
            render=self.render,
            local=self.local,
            fn=fn,
            many=self.many,
            takes_context=takes_context,
        )


def _signature(fn: Callable[..., Any]) -> tuple[type[BaseModel], type[BaseModel], bool]:
    where = f"tool {getattr(fn, '__qualname__', fn)!r}"
    if not inspect.iscoroutinefunction(fn):
        raise ToolDefinitionError(f"{where} must be an `async def`")
    try:
        hints = typing.get_type_hints(fn)
    except NameError as exc:
        raise ToolDefinitionError(f"{where}: an annotation cannot be resolved ({exc})") from None
    params = list(inspect.signature(fn).parameters.values())
    if not 1 <= len(params) <= 2:
        raise ToolDefinitionError(f"{where} takes (args) or (args, ctx), got {len(params)}")
    args_model = hints.get(params[0].name)
    if not (isinstance(args_model, type) and issubclass(args_model, BaseModel)):
        raise ToolDefinitionError(f"{where}: its first argument must be a pydantic model")
    result_model = hints.get("return")
    if not (isinstance(result_model, type) and issubclass(result_model, BaseModel)):
        raise ToolDefinitionError(f"{where} must return a pydantic model (annotate it)")
    if args_model.model_config.get("extra") != "forbid":
        # Plans are untrusted input: an argument the tool does not know is an error, not
        # something to drop in silence.
        raise ToolDefinitionError(
            f"{where}: {args_model.__name__} must forbid unknown fields "
            "(subclass agentkeel.ToolArgs or set model_config = ConfigDict(extra='forbid'))"
        )
    reserved = sorted(RESERVED_ARGUMENTS & set(args_model.model_fields))
    if reserved:
        # The workflow sets these beside the plan's arguments: an argument of the same name
        # would let a plan choose the tenant or actor, or be silently overwritten.
        raise ToolDefinitionError(
            f"{where}: {args_model.__name__} has argument(s) named {', '.join(reserved)}, "
            "which the workflow sets itself; read them from the ToolContext "
            f"(reserved: {', '.join(sorted(RESERVED_ARGUMENTS))})"
        )
    return args_model, result_model, len(params) == 2


def input_model(name: str, args_model: type[BaseModel], *, side_effect: bool) -> type[BaseModel]:
    """What the activity receives: the plan's arguments plus what the workflow adds (the
    actor, the call id, and a side effect's idempotency key), never a plan's to set."""
    fields: dict[str, Any] = {}
    if side_effect:
        fields["idempotency_key"] = (str, Field(min_length=1, max_length=200))
    model: type[BaseModel] = create_model(
        f"{args_model.__name__}Input",
        __base__=(args_model, ActorScoped),
        __module__=args_model.__module__,
        **fields,
    )
    return model


def _check_result_path(name: str, result_model: type[BaseModel], path: str) -> None:
    """A trusted field must exist in the result model: a typo would trust nothing, silently."""
    current: Any = result_model
    for segment in path.split("."):
        current = _unwrap_optional(current)
        if segment == "*" and typing.get_origin(current) is list:
            current = typing.get_args(current)[0]
        elif isinstance(current, type) and issubclass(current, BaseModel):
            if segment not in current.model_fields:
                raise ToolDefinitionError(
                    f"tool {name!r}: trusted field {path!r}: {current.__name__} has no "
                    f"field {segment!r} (has {', '.join(current.model_fields)})"
                )
            current = current.model_fields[segment].annotation
        else:
            raise ToolDefinitionError(
                f"tool {name!r}: trusted field {path!r}: {segment!r} does not name a field "
                "(use `*` for the elements of a list)"
            )


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _first_paragraph(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())
