"""Where each argument of a step came from, and whether a side effect may act on it.

A plan is written by a model that has read untrusted text (knowledge-base articles, service
responses, earlier turns, what users typed into their own records). Its arguments are
therefore untrusted input, except where a value can be traced to something the run trusts:

- the request itself: a literal that the current request's own words contain (`ticket 1002`,
  `$19.50`), or every literal of a plan a trusted caller sent;
- the actor: the subject the request acts for;
- a trusted field: a result field the tool declares (`trusted_fields`) of a call whose own
  arguments are trusted (a ticket's `account_id` read by a `ticket_id` the user named).

Anything else (other tool output, a literal only the model knows) is untrusted. A side
effect's target (`identity_args`) and amount (`amount_arg`) must be trusted; the workflow
refuses it, or sends it to approval where the domain says so, whoever planned it. Because
the plan's data flow is explicit (`$ref`s), this is exact: no value reaches an argument
except through a reference or a literal. (The design follows CaMeL: capabilities on
values, policies on tool calls, control flow from the trusted query alone.)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, get_args

from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.plan.asked import AMENDED, ASIDES, TARGETS, mentions, spelled_out
from agentkeel.schemas.plan.binding import SUBJECT, bind_to_asked
from agentkeel.schemas.plan.model import PlanStep
from agentkeel.schemas.plan.references import Reference
from agentkeel.schemas.tools.spec import ToolSpec

Role = Literal["amount", "identity", "any"]
"""What an argument is to the side effect: its amount (money, in cents), its target (an
identity argument), or anything else."""

READS_AS_ASKED = 2
"""`TrustedFacts.rules` from which requests are read as `schemas.plan.asked` reads them
(amounts in words and with the symbol after, targets and amounts bound to what is asked,
every argument of a side effect without identity arguments checked); 1: as before."""
READS_ASIDES = ASIDES
"""From here `schemas.plan.asked` also reads asides, past and refused askings, pairs each
amount with its own target, and binds a looked-up target by its value (`ASIDES`)."""
READS_AMENDED = AMENDED
"""From here a corrected amount and a price told of the target are not asked
(`schemas.plan.second_thoughts`), and an amount looked up is paired with its own target
as a written one is (`schemas.plan.binding`)."""
READS_TARGETS = TARGETS
"""From here amounts are bound in the tool's currency and targets by their kind, and a
target looked up may not stand in for the one the request asks (`schemas.plan.kinds`)."""


@dataclass(frozen=True)
class TrustedFacts:
    """What the run trusts as given: the request's own words, its actor's subject, and
    whether the plan itself came from a trusted caller."""

    text: str
    subject: str | None = None
    caller_plan: bool = False
    rules: int = 1
    """Which reading the run was recorded with (`READS_AS_ASKED`)."""

    def numbers(self, role: Role = "any") -> frozenset[int]:
        """Integers the words name, as `role` may use them.

        A number written as money (`$19.50`, `19.50`, `15 euros`, `500 cents`; from
        `READS_AS_ASKED` also `five dollars`, `5$`, `5€`) is an amount, in cents; any other
        (`ticket 1002`) names something. So an amount cannot be taken from an id the request
        named, nor a target from the money it named."""
        asked = self.rules >= READS_AS_ASKED
        text = spelled_out(self.text, self.rules) if asked else self.text
        found = mentions(text, symbol_after=asked, rules=self.rules)
        amounts = {m.value for m in found if m.kind == "amount"}
        names = {m.value for m in found if m.kind == "name"}
        if role == "amount":
            return frozenset(amounts)
        if role == "identity":
            return frozenset(names)
        return frozenset(amounts | names)


class Provenance:
    """The origins of the arguments of one plan's steps, computed from the plan alone."""

    def __init__(
        self, steps: Mapping[str, PlanStep], tools: Mapping[str, ToolSpec], facts: TrustedFacts
    ) -> None:
        self._steps = steps
        self._tools = tools
        self._facts = facts
        self._numbers = {role: facts.numbers(role) for role in get_args(Role)}
        self._words = facts.text.casefold()
        self._step_trust: dict[str, ArgumentOrigin] = {}
        self._under: dict[int, Provenance] = {}

    def under(self, rules: int) -> Provenance:
        """This plan's provenance as a run recorded with `rules` reads it
        (`TrustedFacts.rules`): asked per side effect, so a run without one records no
        marker for it."""
        if rules == self._facts.rules:
            return self
        known = self._under.get(rules)
        if known is None:
            facts = dataclasses.replace(self._facts, rules=rules)
            known = self._under[rules] = Provenance(self._steps, self._tools, facts)
        return known

    def step(self, step_id: str) -> PlanStep | None:
        return self._steps.get(step_id)

    def of_effect(self, step: PlanStep) -> dict[str, ArgumentOrigin]:
        """The origin of each argument that says what a side effect changes and by how much:
        its identity arguments and amount, or (from `READS_AS_ASKED`) every argument of one
        that declares no identity arguments (an MCP tool's, say)."""
        spec = self._tools[step.tool]
        roles: dict[str, Role] = {name: "identity" for name in spec.identity_args}
        facts = self._facts
        if not roles and not spec.idempotent and facts.rules >= READS_AS_ASKED:
            # A trusted caller's plan wires its own data flow: only a planner's is checked
            # argument by argument (a note to delete that the request never named).
            if not facts.caller_plan:
                roles = {name: "identity" for name in step.args}
        if spec.amount_arg:
            roles[spec.amount_arg] = "amount"
        return {
            name: self.of_value(step, step.args[name], role)
            for name, role in roles.items()
            if name in step.args
        }

    def of_call(self, step: PlanStep, resolved: Mapping[str, Any]) -> dict[str, ArgumentOrigin]:
        """`of_effect`, then a check of the amount the call will really move (`resolved`, the
        arguments with their references filled in).

        A request that names its amounts names all of them: a trusted lookup (an invoice's
        total) may not stand in for the "$5" the user asked. From `READS_AS_ASKED`, a
        request that names no amount names none for a lookup to fill in either, and the
        target and amount named in the request must be a pair it asks for
        (`schemas.plan.asked`), not numbers it mentions."""
        origins = self.of_effect(step)
        if self._facts.caller_plan:
            return origins
        if self._facts.rules >= READS_AS_ASKED:
            spec = self._tools[step.tool]
            facts = self._facts
            return bind_to_asked(spec, step.args, resolved, origins, facts.text, facts.rules)
        amount_arg = self._tools[step.tool].amount_arg
        named = self._numbers["amount"]
        if amount_arg not in origins or not named:
            return origins
        amount = resolved.get(amount_arg)
        if amount not in named and origins[amount_arg].trusted:
            asked = ", ".join(str(n) for n in sorted(named))
            origins[amount_arg] = _untrusted(
                f"{amount} is not an amount the request names ({asked} cents)"
            )
        return origins

    def of_value(self, step: PlanStep, value: Any, role: Role = "any") -> ArgumentOrigin:
        """The origin of `value`, an argument of `step` as the plan wrote it, used as `role`."""
        ref = Reference.parse(value)
        if ref is not None:
            return self._of_reference(step, ref)
        if isinstance(value, Mapping):
            return _weakest([self.of_value(step, v, role) for v in value.values()])
        if isinstance(value, list):
            return _weakest([self.of_value(step, v, role) for v in value])
        return self._of_literal(value, role)

    def _of_literal(self, value: Any, role: Role) -> ArgumentOrigin:
        if self._facts.caller_plan:
            return _trusted("given in the caller's own plan")
        if value is None or isinstance(value, bool):
            return _trusted("a constant")
        subject = self._facts.subject
        if role != "amount" and subject is not None and str(value) == subject:
            return _trusted(SUBJECT)
        numbers = self._numbers[role]
        if isinstance(value, int) and value in numbers:
            return _trusted("named in the request")
        if isinstance(value, float) and value.is_integer() and int(value) in numbers:
            return _trusted("named in the request")
        if isinstance(value, str) and _as_int(value) in numbers:
            return _trusted("named in the request")  # a number written as text: "15000"
        if isinstance(value, str) and role != "amount" and self._in_words(value):
            return _trusted("named in the request")
        if role == "amount":
            return _untrusted(f"{value!r} was written by the planner, not as money in the request")
        return _untrusted(f"{value!r} was written by the planner and is not in the request")

    def _in_words(self, value: str) -> bool:
        """`value` occurs in the request as a whole token (`T-7` in "close T-7", not "a"
        inside "a credit" being taken for an id `a`)."""
        wanted = value.strip().casefold()
        if not wanted:
            return False
        return re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", self._words) is not None

    def _of_reference(self, step: PlanStep, ref: Reference) -> ArgumentOrigin:
        if ref.step is None:  # `$item.x`: an element of the list the step goes over
            if step.for_each is None:
                return _untrusted(f"{ref} outside a for_each step")
            source = Reference.parse(step.for_each)
            if source is None or source.step is None:
                return _untrusted(f"{step.for_each!r} is not a reference")
            ref = Reference(source.step, (*source.path, "*", *ref.path))
        assert ref.step is not None
        source_step = self._steps.get(ref.step)
        if source_step is None:
            return _untrusted(f"{ref} names no step of this plan")
        spec = self._tools.get(source_step.tool)
        field = ".".join("*" if part.isdigit() else part for part in ref.path)
        if spec is None or field not in spec.trusted_fields:
            tool = source_step.tool
            return _untrusted(f"{ref} is {tool} output, which is untrusted content")
        looked_up = self._trust_of_step(source_step)
        if not looked_up.trusted:
            return _untrusted(f"{ref} was looked up by untrusted arguments ({looked_up.says})")
        return _trusted(f"{ref}: {source_step.tool}.{field}, looked up by trusted arguments")

    def _trust_of_step(self, step: PlanStep) -> ArgumentOrigin:
        """Whether every argument of `step` (and the list it goes over) is trusted."""
        known = self._step_trust.get(step.id)
        if known is not None:
            return known
        # A cycle cannot pass validation; this guards the recursion all the same.
        self._step_trust[step.id] = _untrusted(f"step {step.id} depends on itself")
        origins = [self.of_value(step, v) for v in step.args.values()]
        if step.for_each is not None:
            origins.append(self.of_value(step, step.for_each))
        verdict = _weakest(origins)
        self._step_trust[step.id] = verdict
        return verdict


def _as_int(text: str) -> int | None:
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return None
    return int(number) if number.is_finite() and number == number.to_integral_value() else None


def _trusted(says: str) -> ArgumentOrigin:
    return ArgumentOrigin(trusted=True, says=says)


def _untrusted(says: str) -> ArgumentOrigin:
    return ArgumentOrigin(trusted=False, says=says)


def _weakest(origins: list[ArgumentOrigin]) -> ArgumentOrigin:
    for origin in origins:
        if not origin.trusted:
            return origin
    return _trusted("built of trusted values") if origins else _trusted("a constant")
