"""Checks for a domain's own tests: a question planned and held to a run's rules, no stack.

```python
from agentkeel import Actor
from agentkeel.testing import check_plan

checked = check_plan(domain, "Close item 2", actor=Actor(role="member", subject="ada"))
assert checked.refused is None                      # admitted and valid against the catalog
close = checked.effect("close_item")
assert close.refused is None                        # its target comes from the request
assert close.approval == "close_item always needs an approval"
```

`check_plan` (and `rehearse`, its async form) plans with the domain's rules policy (or
takes `plan=`, as a caller's plan) and runs the plan through the functions the workflow
runs it through: the actor check, admission, validation against the catalog, provenance,
the `UntrustedArgument` refusal and the approval rule. Mistakes in a domain's
`PlanPattern`s (a tool, an argument, an intent or a `$ref` field that does not exist) fail
earlier still: building the `Domain` raises `DomainError` naming them.
"""

from __future__ import annotations

from agentkeel.workflows.dag.rehearsal import EffectCheck, PlanCheck, check_plan, rehearse

__all__ = ["EffectCheck", "PlanCheck", "check_plan", "rehearse"]
