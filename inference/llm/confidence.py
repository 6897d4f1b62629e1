"""Route confidence from the model's own token probabilities.

The router decodes one label from a closed list (constrained decoding). The grammar
makes every output a valid label, so the sampled label alone says nothing about how
sure the model was; its token probabilities do. At each generated position, the chosen
token's probability is renormalized over the tokens that keep the output on the way to
some label (those among the returned top alternatives), and the product over positions
is the probability of the label under the model restricted to the labels: the quantity
the router threshold is compared with.

vLLM's logprobs are the raw model's (before the grammar's mask), which is what makes
this renormalization meaningful; OpenAI-compatible servers that return masked logprobs
give a confidence nearer 1 for the same output, erring towards trusting the router.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Literal

from agentkeel.inference.engines.protocol import TokenLogprob

UnmeasuredRoute = Literal["escalate", "trust"]
"""The declared rule for a route whose confidence could not be measured (a server that
returns no logprobs): `escalate` sends every such request to the planner (the heavy tier
in a cascade), so each is planned with the full planning prompt and its retries; `trust`
lets the router's label and draft plan stand, as if it were sure."""


def label_confidence(
    logprobs: Sequence[TokenLogprob] | None, labels: Sequence[str]
) -> float | None:
    """The probability of the decoded label among `labels`, from per-token logprobs.

    Labels may appear as text or as a JSON string (a server that constrains choices by a
    JSON schema emits `"refund"` with quotes), and with leading whitespace (after a cue
    such as `Intent:` the model's own choice is `" refund"`, which the grammar forbids but
    which names the same label): all count as on the way. The probability mass outside
    the returned top alternatives might belong to other labels, so it joins the
    denominator: the confidence is a lower bound, erring towards escalation. With no
    logprobs, or no position on the way to a label, nothing was measured: None (never a
    stand-in number; the policy applies its declared rule, `UnmeasuredRoute`).
    """
    if not logprobs:
        return None
    quoted = [json.dumps(label) for label in labels]
    # A strict JSON-schema server writes the label as the one property of an object
    # (`inference.engines.structured.choice_schema`): its tokens are on the way too.
    wrapped = [f'{{"choice":{q}}}' for q in quoted] + [f'{{"choice": {q}}}' for q in quoted]
    spellings = [*labels, *quoted, *wrapped]

    def on_the_way(text: str) -> bool:
        text = text.lstrip()
        return bool(text) and any(s.startswith(text) for s in spellings)

    prefix = ""
    total = 0.0
    measured = False
    for position in logprobs:
        alternatives = dict(position.top)
        alternatives[position.token] = position.logprob
        if on_the_way(prefix + position.token):
            counted = [lp for token, lp in alternatives.items() if on_the_way(prefix + token)]
            listed = sum(math.exp(lp) for lp in alternatives.values())
            residual = 1.0 - listed
            if residual > 1e-9:
                counted.append(math.log(residual))
            total += position.logprob - _logsumexp(counted)
            measured = True
        prefix += position.token
    if not measured:
        return None
    return min(1.0, math.exp(total))


def _logsumexp(values: Sequence[float]) -> float:
    finite = [v for v in values if v != float("-inf")]
    if not finite:
        return 0.0
    peak = max(finite)
    return peak + math.log(sum(math.exp(v - peak) for v in finite))
