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
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

EFFECT_IDENTITY_PATCH = "effect-identity-v1"
"""Runs started before it name a tool that declares no identity arguments by the tool (and
amount) alone: a second call with other arguments counted as the first, made already."""

EFFECT_CHAIN_PATCH = "effect-identity-v2"
"""Runs started before it ask `EFFECT_IDENTITY_PATCH` at their first effect and hand
nothing on; a run they continue asks it again."""

EFFECT_NAMING_MEMO = "agentkeel.effect_naming"
BY_EVERY_ARGUMENT = "every-argument"
BY_TOOL = "tool"


def names_every_argument() -> bool:
    """Asked at each side effect: whether this run names its effects by every argument.
    A run that predates `EFFECT_CHAIN_PATCH`, or whose continuer wrote no naming, asks
    `EFFECT_IDENTITY_PATCH` (as before); both answers are memoized for the run."""
    naming = _chain_naming()
    return naming if naming is not None else workflow.patched(EFFECT_IDENTITY_PATCH)


def _chain_naming() -> bool | None:
    if not workflow.patched(EFFECT_CHAIN_PATCH):
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
