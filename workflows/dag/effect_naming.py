"""How a run chain names its side effects: decided once per chain, handed on by its memo.

`effect-identity-v1` names an effect of a tool without identity arguments by every
argument (before it, by the tool alone). It is asked at a run's first effect and
memoized for the run, so an older run keeps its naming through a deploy. A chain continued
as new asked it afresh in each run, though: an effect its first run made under the old
name, planned again by a continued run, got a new key and was made twice.

`effect-identity-v2` is asked beside it, at a run's first effect. A run that takes it
names effects as its chain does: by every argument where it begins the chain, else as its
continuer wrote in the memo key `EFFECT_NAMING_MEMO`; a run that made an effect writes its
naming there on handing on (asked at the effect, not at the hand-on: a patch first asked
after a local activity of the same workflow task does not replay under a query). A memo is not
the workflow's input, so workers of an earlier release read such a continued run as
before (a `Continuation` refuses fields it does not know).

`effect-identity-v3` names an effect whose named values would not read back as themselves
(a text with `:` or `=`, or one that prints as `None` or a list does) by the digest of the
values' JSON: spelled as `k=v` pairs joined by `:`, two different calls could share one
name, and the second then counted as made already, skipping its approval. Asked only at
such an effect; every other name is spelled as before. A chain continued as new asks it
afresh, and so does a run started again with the same `request_id`: an effect with such a
value, made before the release and planned again after it by the chain or by the same
request sent again, would get a new key (as `effect-identity-v1` once did).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from temporalio import workflow

from agentkeel.schemas.tools import ToolSpec
from agentkeel.workflows.release import since

EFFECT_IDENTITY_PATCH = "effect-identity-v1"
"""Runs started before it name a tool that declares no identity arguments by the tool (and
amount) alone: a second call with other arguments counted as the first, made already."""

EFFECT_CHAIN_PATCH = "effect-identity-v2"
"""Runs started before it ask `EFFECT_IDENTITY_PATCH` at their first effect and hand
nothing on; a run they continue asks it again."""

EFFECT_SPELLING_PATCH = "effect-identity-v3"
"""Runs started before it spell every value of an effect's name as it prints, so two
different calls could share one name (`body="hi:cc=eve"` and `body="hi", cc="eve"`; `None`
and `"None"`) and the second count as made already. Asked only at an effect whose
arguments could be spelled so."""

EFFECT_NAMING_MEMO = "agentkeel.effect_naming"
BY_EVERY_ARGUMENT = "every-argument"
BY_TOOL = "tool"


_LONGEST_IDENTITY = 200
"""Past this, the arguments are named by their digest (a note's text, say), not spelled out."""
_SPELLS_AMBIGUOUSLY = re.compile(r"[:=\\]|^(?:None|True|False)$|^[\[{]")
"""A text spelled as it prints could read as another value, or as more arguments: `k=v`
pairs are joined by `:`, and `None`, `True`, a list print as their texts do."""


def effect_identity(
    spec: ToolSpec,
    args: dict[str, Any],
    *,
    every_argument: bool = True,
    unambiguous: bool = False,
) -> str:
    """What the effect changes, as its key names it: `issue_credit:account_id=7:amount_cents=5`.

    A tool that declares its identity arguments is named by those and its amount, so a
    replan that rewords a `reason` finds the same effect. One that declares none is named by
    every argument: two calls that differ in anything are two effects, each approved and
    made on its own (`every_argument=False`: runs recorded before, by the tool alone).
    `unambiguous` (`EFFECT_SPELLING_PATCH`): where a named value would not read back as
    itself (`_SPELLS_AMBIGUOUSLY`), the name is the digest of the values' JSON, so two
    different calls never share one. (`7` and `"7"` still name one effect, as one.)"""
    values = named_values(spec, args, every_argument=every_argument)
    if unambiguous and not _spelled_as_themselves(values):
        return _digest(spec, values)
    if spec.identity_args or not every_argument:
        return ":".join([spec.name, *(f"{name}={value}" for name, value in values.items())])
    spelled = ":".join([spec.name, *(f"{k}={_plain(v)}" for k, v in values.items())])
    if len(spelled) <= _LONGEST_IDENTITY:
        return spelled
    return _digest(spec, values)


def named_values(spec: ToolSpec, args: dict[str, Any], *, every_argument: bool) -> dict[str, Any]:
    """The arguments an effect's name spells, in its order."""
    if spec.identity_args or not every_argument:
        named = [*spec.identity_args, *([spec.amount_arg] if spec.amount_arg else [])]
        return {name: args.get(name) for name in named}
    return {key: args[key] for key in sorted(args)}


def spelling_unambiguous(values: dict[str, Any]) -> bool:
    """Asked at each side effect with its `named_values`: whether its name digests values
    that would not read back as themselves (`EFFECT_SPELLING_PATCH`, asked only there: a
    run begun before `release-2026-12-06` has its marker only where the name differs)."""
    return not _spelled_as_themselves(values) and since(EFFECT_SPELLING_PATCH)


def _spelled_as_themselves(values: dict[str, Any]) -> bool:
    """Whether every `key=value` reads back as itself between `:` separators."""
    return all(_spells_as_itself(key, value) for key, value in values.items())


def _spells_as_itself(key: str, value: Any) -> bool:
    if _SPELLS_AMBIGUOUSLY.search(key):
        return False
    if isinstance(value, str):
        return _SPELLS_AMBIGUOUSLY.search(value) is None
    # JSON (a list, a mapping) or a number, `None`, a bool: no text spells as these now.
    return value is None or isinstance(value, (bool, int, float, list, dict))


def _digest(spec: ToolSpec, args: dict[str, Any]) -> str:
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
    return f"{spec.name}:args#{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"


def _plain(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return str(value)


def names_every_argument() -> bool:
    """Asked at each side effect: whether this run names its effects by every argument.
    A run that predates `EFFECT_CHAIN_PATCH`, or whose continuer wrote no naming, asks
    `EFFECT_IDENTITY_PATCH` (as before); both answers are memoized for the run."""
    naming = _chain_naming()
    return naming if naming is not None else since(EFFECT_IDENTITY_PATCH)


def _chain_naming() -> bool | None:
    if not since(EFFECT_CHAIN_PATCH):
        return None
    if workflow.info().continued_run_id is None:
        return True
    naming = workflow.memo_value(EFFECT_NAMING_MEMO, None, type_hint=str)
    if naming not in (BY_EVERY_ARGUMENT, BY_TOOL):
        return None
    return bool(naming == BY_EVERY_ARGUMENT)


def handed_on_memo(every_argument: bool | None) -> dict[str, Any] | None:
    """The memo of the run this one continues as: its own and, where this run made an
    effect (`every_argument`, as `names_every_argument` said), the chain's naming. None:
    the memo carries on as it is (a run that made no effect decided nothing; its
    continuer's naming, if any, is in the memo already)."""
    if every_argument is None:
        return None
    word = BY_EVERY_ARGUMENT if every_argument else BY_TOOL
    return {**workflow.memo(), EFFECT_NAMING_MEMO: word}
