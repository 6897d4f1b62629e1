"""A side effect's target and amount bound to what the request asks (`schemas.plan.asked`).

Provenance says where each value came from; this says whether the values the call will
really use are the pair the request asks for. A value that fails is marked untrusted, with
why, so the effect gate refuses it or shows it to an approver (the domain's
`untrusted_effects`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentkeel.schemas.origin import ArgumentOrigin
from agentkeel.schemas.plan.asked import (
    AMENDED,
    ASIDES,
    TARGETS,
    Mention,
    Region,
    asked_regions,
    mentions,
    spelled_out,
)
from agentkeel.schemas.plan.effect_verbs import effect_verbs
from agentkeel.schemas.plan.kinds import arg_noun, currency_fits, same_noun
from agentkeel.schemas.plan.references import Reference
from agentkeel.schemas.tools.spec import ToolSpec

NAMED = "named in the request"
"""What provenance says of a literal the request's words contain."""
SUBJECT = "the actor's own subject"
"""What provenance says of a literal that is the actor's subject."""


def bind_to_asked(
    spec: ToolSpec,
    written: Mapping[str, Any],
    resolved: Mapping[str, Any],
    origins: dict[str, ArgumentOrigin],
    text: str,
    rules: int = ASIDES,
) -> dict[str, ArgumentOrigin]:
    """`origins` with the target and amount of the call checked against what `text` asks.

    `written`: the step's arguments as the plan wrote them (a literal or a reference);
    `resolved`: as the call will send them. Three rules: an amount the request names must
    be asked together with the targets the request names (a region of
    `asked_regions`); an amount looked up (a record's total) stands only where the request
    names no amount and is then shown as such, never taken as asked; a target the request
    names must be one it asks for."""
    silent = not spec.asked_by and not spec.idempotent and rules >= TARGETS
    refusing = effect_verbs(spec.name) if silent else ()
    regions = asked_regions(text, spec.asked_by, rules, refusing)
    named = mentions(spelled_out(text, rules), symbol_after=True, rules=rules)
    spelled = {m.value for m in named if m.kind == "name"}
    # A target is bound by its value, however the plan reached it: one the request names is
    # checked whether it was written as a literal or looked up by a reference
    # (a lookup of record 4774, then its id by reference: `$s1.id`).
    targets = {
        name: number
        for name, origin in origins.items()
        if name != spec.amount_arg
        and origin.trusted
        and (number := _number(resolved.get(name))) is not None
        and (origin.says == NAMED or (rules >= ASIDES and number in spelled))
    }
    amount_arg = spec.amount_arg
    # From `TARGETS` amounts and names have kinds (before, none: every one fits).
    currency = spec.amount_currency if rules >= TARGETS else None
    if amount_arg is not None and amount_arg in origins and origins[amount_arg].trusted:
        amount = resolved.get(amount_arg)
        unasked = f"{_describe(amount, targets)} is not what the request asks ({_asked(regions)})"
        if Reference.parse(written.get(amount_arg)) is not None:
            if not any(m.kind == "amount" for m in named):
                origins[amount_arg] = _untrusted(
                    f"the request names no amount: {amount} cents is {origins[amount_arg].says}"
                )
            elif not any(
                _pair(r, amount, targets, currency) if rules >= AMENDED else amount in r.amounts
                for r in regions
            ):
                origins[amount_arg] = _untrusted(unasked)
        elif not any(_pair(r, amount, targets, currency) for r in regions):
            origins[amount_arg] = _untrusted(unasked + _foreign(regions, amount, currency))
            return origins
    for name, number in targets.items():
        if not any(number in r.names_for(arg_noun(name)) for r in regions):
            origins[name] = _untrusted(
                f"{number} is mentioned in the request, not asked for ({_asked(regions)})"
            )
    if rules >= TARGETS:
        _bind_looked_up(spec, resolved, origins, targets, regions, named)
    if rules >= ASIDES and (spec.asked_by or refusing):
        _bind_words(spec, resolved, origins, regions, rules, text.casefold())
    return origins


_ID_LIKE = 100
"""A number without the argument's noun before it counts as a target the request names
only from here ("on 5903", not "from 3 days ago")."""


def _bind_looked_up(
    spec: ToolSpec,
    resolved: Mapping[str, Any],
    origins: dict[str, ArgumentOrigin],
    targets: Mapping[str, int],
    regions: list[Region],
    named: list[Mention],
) -> None:
    """A target looked up (a customer's orders, then one of them by reference) where the
    request names targets ("refund $5 on order 5903", "on #5903", "My order 5903 arrived
    broken. Please refund $5.") must be one of them: the customer's other order may not
    stand in for the one named."""
    for name, origin in origins.items():
        noun = arg_noun(name)
        number = _number(resolved.get(name))
        if name == spec.amount_arg or name in targets or number is None or not noun:
            continue
        if not origin.trusted or origin.says == SUBJECT:
            continue
        asked = {
            m.value
            for r in regions
            for m in r.named
            if m.kind == "name"
            and m.value in r.names_for(noun)
            and (m.value >= _ID_LIKE or (m.noun is not None and same_noun(m.noun, noun)))
        }
        asked |= {m.value for m in named if m.kind == "name" and m.noun and same_noun(m.noun, noun)}
        if asked and number not in asked:
            listed = ", ".join(str(n) for n in sorted(asked))
            origins[name] = _untrusted(
                f"{number} was looked up ({origin.says}); the request names {noun} {listed}"
            )


def _texts(value: Any, depth: int = 4) -> list[Any]:
    """The texts in `value`, a list or an object, however nested (to `depth`): a list of
    names, or of objects naming things (`[{"name": "lunch"}]`)."""
    if isinstance(value, str) or depth == 0:
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [t for item in value for t in _texts(item, depth - 1)]
    return []


def _foreign(regions: list[Region], amount: Any, currency: str | None) -> str:
    """Why an amount the request writes is not asked: another currency than the tool's."""
    for region in regions:
        for m in region.named:
            if m.kind == "amount" and m.value == amount and not currency_fits(m.currency, currency):
                return f"; it writes that amount in {m.currency}, and this tool moves {currency}"
    return ""


def _bind_words(
    spec: ToolSpec,
    resolved: Mapping[str, Any],
    origins: dict[str, ArgumentOrigin],
    regions: list[Region],
    rules: int,
    request: str,
) -> None:
    """A target written as text the request names must be in an asking's own clause
    (from `TARGETS` each text that the request names in a list or object too: an MCP
    tool's `entityNames`)."""
    for name, origin in origins.items():
        value = resolved.get(name)
        if name == spec.amount_arg or not origin.trusted:
            continue
        listed = isinstance(value, list | dict) and rules >= TARGETS
        texts = _texts(value) if listed else [value]
        if origin.says != NAMED and not listed:
            continue
        for text in texts:
            if not isinstance(text, str) or _number(text) is not None or not text.strip():
                continue
            # The clauses are read with numbers in words as digits: so is the value.
            written = {text.strip().casefold(), spelled_out(text.strip()).casefold()}
            wanted = [re.compile(rf"(?<!\w){re.escape(w)}(?!\w)") for w in written]
            if listed and not any(w.search(request) for w in wanted):
                continue  # not a name the request writes: provenance said where it came from
            if not any(w.search(r.clause) for w in wanted for r in regions):
                asked = "; ".join(r.clause.strip() for r in regions if r.clause.strip())
                origins[name] = _untrusted(
                    f"{text!r} is mentioned in the request, not asked for "
                    f"({'it asks: ' + asked if asked else 'it asks for nothing'})"
                )
                break


def _pair(
    region: Region, amount: Any, targets: Mapping[str, int], currency: str | None = None
) -> bool:
    if amount not in region.amounts_in(currency):
        return False
    if not all(t in region.names_for(arg_noun(name)) for name, t in targets.items()):
        return False
    if len(region.names) <= 1 or not targets or not region.pairs:
        return True  # (a reading before `ASIDES` pairs nothing)
    return any((t, amount) in region.pairs for t in targets.values())


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())  # ("²".isdigit() holds, and int() refuses it)
    return None


def _describe(amount: Any, targets: Mapping[str, int]) -> str:
    on = ", ".join(f"{name}={value}" for name, value in targets.items())
    return f"{amount} cents" + (f" on {on}" if on else "")


def _asked(regions: list[Region]) -> str:
    asked = [
        " ".join(
            [
                *(f"{n}" for n in sorted(r.names)),
                *(f"{a} cents" for a in sorted(r.amounts)),
            ]
        )
        for r in regions
        if r.names or r.amounts
    ]
    return "it asks: " + "; ".join(asked) if asked else "it asks for no number"


def _untrusted(says: str) -> ArgumentOrigin:
    return ArgumentOrigin(trusted=False, says=says)
