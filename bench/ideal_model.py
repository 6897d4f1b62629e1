"""The ideal model of the peer benchmarks, in each caller's own format.

Given one chat-completions request, it answers what a perfect model would write for the
bench question the conversation is about (`bench.peer_cases`), in the form the caller asked
for:

- **tool calling** (OpenAI Agents, Pydantic AI): every call whose inputs have returned, all
  at once, with `$ref` arguments resolved from the tool results in the conversation (a
  failed call's error text is no result: the call is made again, as the conversation now
  reads it); once nothing is left, the answer. Where the caller offers an answer tool (Pydantic AI's
  output tool, an Agents `StopAtTools` tool), it is called *with* the last round of tools,
  so no model turn follows them: the framework's own lever.
- **a JSON document for a schema** (agentkeel's LLM policy): a route label from the
  schema's enum (bare, or as strict mode's `{"choice": ...}`) with the scenario's
  certainty in its logprobs, or in a reported route (`{"intent", "confidence"}`) on the
  0-10 scale, a plan with the question's steps (ids and
  `$refs` in agentkeel's plan format, an `intent` and an `answer` template where the
  schema has them), a join's `finish` (or `replan` once a wrong-once question's misread
  lookup failed: the next plan, its failure in the prompt, reads the question right).
- **plain text** (a respond call): a one-sentence answer.

It never looks at anything but the request, so every system gets the same model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bench.ideal_plan import intent_of, reading_document
from bench.peer_cases import (
    NoSuchOrder,
    case_in,
    corrected,
    failure_of,
    next_round,
    result_of,
)
from bench.peer_fakes import ANSWER
from bench.token_text import Reply, ToolCall

ANSWER_TOOLS = ("final_result", "final_answer", "answer")
"""Names under which callers offer a tool that carries the final answer."""


@dataclass(frozen=True)
class IdealShapeModel:
    """`bench.token_server.Scenario` for the bench questions.

    `route_confidence`: how sure the router is of the intent it picks (below agentkeel's
    threshold, 0.7, the heavy tier plans)."""

    route_confidence: float = 0.95

    def reply(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages", [])
        conversation = _conversation_text(messages)
        if body.get("tools"):
            return _tool_round(conversation, messages, body["tools"])
        schema = _response_schema(body)
        if schema is None:
            return Reply(text=ANSWER)
        if "enum" in schema:  # a bare string enum, as agentkeel sent a choice before
            return self._choice(schema["enum"], messages, wrapped=False)
        properties = schema.get("properties", {})
        if set(properties) == {"choice"}:  # a choice as strict mode takes it
            labels = properties["choice"]["enum"]
            return self._choice(labels, messages, wrapped=True)
        if set(properties) == {"intent", "confidence"}:  # a route with its own confidence
            said = round(self.route_confidence * (len(properties["confidence"]["enum"]) - 1))
            intent = intent_of(properties["intent"]["enum"])
            return Reply(text=json.dumps({"intent": intent, "confidence": said}))
        return Reply(text=json.dumps(reading_document(conversation, schema)))

    def _choice(self, labels: list[str], messages: list[dict[str, Any]], *, wrapped: bool) -> Reply:
        def written(label: str) -> str:
            return json.dumps({"choice": label} if wrapped else label)

        as_json = [written(label) for label in labels]
        if _last_user_text(messages).rstrip().endswith("Decision:"):  # join: a step failed
            case = case_in(_conversation_text(messages))
            # The misread lookup failed in the steps shown: the plan must be written again.
            failed = failure_of(case) in _conversation_text(messages)
            again = case.wrong_once and failed and "replan" in labels
            return Reply(text=written("replan" if again else "finish"), choices=tuple(as_json))
        intent = intent_of(labels)
        return Reply(text=written(intent), choices=tuple(as_json), confidence=self.route_confidence)


def _conversation_text(messages: list[dict[str, Any]]) -> str:
    return " ".join(_content_text(m.get("content")) for m in messages)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    users = [m for m in messages if m.get("role") == "user"]
    return _content_text(users[-1].get("content")) if users else ""


def _response_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    response_format = body.get("response_format") or {}
    if response_format.get("type") != "json_schema":
        return None
    schema: dict[str, Any] = response_format["json_schema"]["schema"]
    return schema


# Tool calling ------------------------------------------------------------------------------


def _tool_round(conversation: str, messages: list[dict[str, Any]], tools: list[Any]) -> Reply:
    outputs = _tool_outputs(messages)
    pending = next_round(conversation, outputs)
    answer_tool = _answer_tool(tools)
    case = case_in(conversation)
    # A call made again after a failure needs an id of its own in the conversation.
    again = "_again" if case.wrong_once and corrected(case, conversation) else ""
    calls = [ToolCall(f"call_{c.step_id}{again}", c.tool, c.args) for c in pending]
    if answer_tool is None:
        return Reply(tool_calls=tuple(calls)) if calls else Reply(text=ANSWER)
    simulated = _simulated(pending)
    if calls and simulated is not None and not next_round(conversation, {**outputs, **simulated}):
        # The last round: the answer goes with it, so no model turn follows the tools.
        calls.append(_answer_call(answer_tool))
    return Reply(tool_calls=tuple(calls or [_answer_call(answer_tool)]))


def _tool_outputs(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Step id -> result, from the `tool` messages (their call ids are `call_<step id>`, with
    a suffix for a call made again). A tool's result is a JSON object; any other text, or
    an object of an `error` (as Pydantic AI reports a failed call), is the framework's
    report of a failed call, which leaves its step without a result."""
    outputs: dict[str, Any] = {}
    for message in messages:
        call_id = message.get("tool_call_id")
        if message.get("role") == "tool" and isinstance(call_id, str):
            step_id = call_id.removeprefix("call_").partition("_")[0]
            try:
                result = json.loads(_content_text(message.get("content")))
            except json.JSONDecodeError:
                continue
            if isinstance(result, dict) and "error" not in result:
                outputs[step_id] = result
    return outputs


def _simulated(pending: list[Any]) -> dict[str, Any] | None:
    """What the pending calls will return, or None where one of them will fail."""
    try:
        return {c.step_id: result_of(c.tool, c.args) for c in pending}
    except NoSuchOrder:
        return None


def _answer_tool(tools: list[Any]) -> dict[str, Any] | None:
    for tool in tools:
        function = tool.get("function", {})
        if function.get("name") in ANSWER_TOOLS:
            return dict(function)
    return None


def _answer_call(function: dict[str, Any]) -> ToolCall:
    """The answer tool, its string arguments filled with the answer."""
    properties = (function.get("parameters") or {}).get("properties", {})
    arguments = {name: ANSWER for name, p in properties.items() if p.get("type") == "string"}
    return ToolCall("call_answer", function["name"], arguments)


__all__ = ["ANSWER_TOOLS", "IdealShapeModel"]
