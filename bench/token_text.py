"""What the token-timed server says and how many tokens it costs: one rule for every caller.

A real tokenizer is not at hand offline, so tokens are counted the way BPE vocabularies
split English and JSON on average: a word (with its leading space), up to three digits,
or a run of up to three other characters (`{"`, `":`, `"},`). The same rule applies to
every system's prompts and outputs, which is what a fair comparison needs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}|\s+| ?[^\sA-Za-z0-9]{1,3}")


def split_tokens(text: str) -> list[str]:
    """`text` in tokens; joined back they are `text` exactly."""
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    return len(split_tokens(text))


@dataclass(frozen=True)
class ToolCall:
    """One function call the model makes; `call_id` is echoed back with its result."""

    call_id: str
    name: str
    arguments: dict[str, Any]

    def function(self) -> dict[str, str]:
        return {"name": self.name, "arguments": json.dumps(self.arguments)}

    def decoded(self) -> str:
        """What a model decodes for this call: the JSON object every open model's tool-call
        template writes (Hermes and Qwen `{"name": .., "arguments": ..}`, Llama 3's and
        Mistral's alike), without the special tokens around it."""
        return json.dumps({"name": self.name, "arguments": self.arguments})


@dataclass(frozen=True)
class Reply:
    """The ideal model's output: text (plain, or a JSON document for a schema), or tool
    calls (several at once where the caller allows parallel calls).

    `choices`: where the text is one of a closed set (a route's intent), the set as the
    caller spells it; `confidence` is the model's probability of its pick among them,
    reported through logprobs where the caller asks for them."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    choices: tuple[str, ...] = ()
    confidence: float = 1.0

    def spoken(self) -> str:
        """Everything the model decodes, for counting its tokens."""
        calls = "".join(c.decoded() for c in self.tool_calls)
        return (self.text or "") + calls

    def deltas(self, tokens: list[str]) -> Iterator[dict[str, Any]]:
        """One streamed delta per output token (`tokens` is `split_tokens(spoken())`)."""
        if not self.tool_calls:
            for i, token in enumerate(tokens):
                yield {"role": "assistant", "content": token} if i == 0 else {"content": token}
            return
        for index, call in enumerate(self.tool_calls):
            name_tokens = split_tokens(call.name)
            header = {"index": index, "id": call.call_id, "type": "function"}
            yield {"tool_calls": [{**header, "function": {"name": call.name, "arguments": ""}}]}
            sent = 1
            for _ in name_tokens[1:]:
                yield {"tool_calls": [{"index": index, "function": {"arguments": ""}}]}
                sent += 1
            for token in split_tokens(json.dumps(call.arguments)):
                yield {"tool_calls": [{"index": index, "function": {"arguments": token}}]}
                sent += 1
            # The rest of the call's JSON (`{"name": "`, `", "arguments": `, `}`): decoded,
            # so timed, though the API carries none of it.
            for _ in range(count_tokens(call.decoded()) - sent):
                yield {"tool_calls": [{"index": index, "function": {"arguments": ""}}]}


def choice_logprobs(tokens: list[str], reply: Reply, top_n: int) -> list[dict[str, Any]]:
    """Chat-API logprobs for `tokens`: certain everywhere except where the picked choice
    parts from the others, where the pick gets `reply.confidence` and the others share the
    rest (so a caller renormalizing over its labels reads back `confidence`)."""
    others = [c for c in reply.choices if c != reply.text]
    entries = []
    prefix = ""
    spent = False
    for token in tokens:
        rivals = _diverging(others, prefix, token)
        if rivals and not spent:
            spent = True
            chosen = math.log(max(reply.confidence, 1e-9))
            share = (1.0 - reply.confidence) / len(rivals)
            tops = [(token, chosen), *((r, math.log(max(share, 1e-12))) for r in rivals)]
        else:
            chosen, tops = 0.0, [(token, 0.0)]
        entries.append(
            {
                "token": token,
                "logprob": chosen,
                "bytes": None,
                "top_logprobs": [
                    {"token": t, "logprob": lp, "bytes": None} for t, lp in tops[:top_n]
                ],
            }
        )
        prefix += token
    return entries


def _diverging(others: list[str], prefix: str, token: str) -> list[str]:
    """The next tokens of the other choices that part from `prefix + token` here."""
    rivals: list[str] = []
    for other in others:
        if other.startswith(prefix) and not other.startswith(prefix + token):
            rest = split_tokens(other[len(prefix) :])
            if rest and rest[0] not in rivals:
                rivals.append(rest[0])
    return rivals
