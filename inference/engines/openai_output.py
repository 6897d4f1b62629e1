"""Reading an OpenAI-compatible server's answer: the text, its logprobs, the checked output.

The chat and completions APIs put the same things in different places (`message.content`
or `text`; logprobs as `content` entries or as parallel lists), and servers differ within
one API (llama.cpp answers completions with the chat form of logprobs): every reading is
here, once.
"""

from __future__ import annotations

import json
from typing import Any

from agentkeel.inference.engines.constraints import check_output
from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    Constraint,
    GenerateResult,
    JsonSchemaConstraint,
    TokenLogprob,
    Usage,
    as_finish_reason,
)
from agentkeel.inference.engines.strict_schema import strict_document
from agentkeel.inference.engines.structured import CHOICE_KEY


class MalformedAnswer(RuntimeError):
    """The server answered 200 with a body that is not a completion (retried as any failed
    call: a server mid-restart, a proxy's page)."""


def first_choice(body: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """A whole (non-streamed) answer's JSON and its first choice, read as plain JSON."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):  # (nested past the parser's depth: no answer)
        raise MalformedAnswer(f"the server's answer is not JSON: {body[:200]!r}") from None
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise MalformedAnswer(f"the server's answer holds no choice: {body[:200]!r}")
    return answer, choices[0]


def read_answer(
    body: bytes, constraint: Constraint | None, mode: str, *, chat: bool, logprobs: bool
) -> GenerateResult:
    """A whole (non-streamed) answer, read as plain JSON and checked against `constraint`;
    `MalformedAnswer` where the body is no completion."""
    answer, choice = first_choice(body)
    text = choice_text(choice, chat=chat)
    finish = as_finish_reason(choice.get("finish_reason"))
    try:
        read_logprobs = logprobs_of(choice.get("logprobs")) if logprobs else None
        usage = usage_of(answer.get("usage"))
    except (ValueError, TypeError) as exc:  # (pydantic's errors are ValueErrors)
        raise MalformedAnswer(f"the server's answer is malformed: {exc}") from None
    return GenerateResult(
        text=text,
        finish_reason=finish,
        logprobs=read_logprobs,
        usage=usage,
        parsed=parse_output(constraint, text, finish, mode),
    )


def usage_of(usage: Any) -> Usage:
    """A server's `usage` in the protocol's terms (zeros where it gave none: counted by an
    estimate then, `inference.usage`)."""
    if not isinstance(usage, dict):
        return Usage()
    return Usage(
        prompt_tokens=usage.get("prompt_tokens") or 0,
        completion_tokens=usage.get("completion_tokens") or 0,
    )


def choice_text(choice: dict[str, Any], *, chat: bool) -> str:
    """The generated text of a whole (non-streamed) choice (a chat message's content given
    as a list of parts: its text parts, joined)."""
    text = _field(choice.get("message"), "content") if chat else choice.get("text")
    if isinstance(text, list):
        text = "".join(
            p["text"] for p in text if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return text if isinstance(text, str) else ""


def parse_output(constraint: Constraint | None, text: str, finish: str | None, mode: str) -> Any:
    """The decoded output checked against its constraint: a JSON constraint's document, a
    choice's label where the server wrote it as JSON (`json_schema` mode), else None."""
    if isinstance(constraint, ChoiceConstraint) and mode == "json_schema":
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        if isinstance(value, dict):  # `structured.choice_schema`'s object
            value = value.get(CHOICE_KEY)
        text = value if isinstance(value, str) else text
        check_output(constraint, text, finish)
        return text  # the label, unwrapped: the raw text is its JSON document
    if isinstance(constraint, JsonSchemaConstraint) and mode == "json_schema":
        try:
            document = strict_document(json.loads(text))
        except ValueError:
            pass  # not JSON: `check_output` says so
        else:
            text = json.dumps(document)
    if isinstance(constraint, JsonSchemaConstraint | ChoiceConstraint):
        return check_output(constraint, text, finish)
    return None


def logprobs_of(raw: Any) -> list[TokenLogprob]:
    """Per-token logprobs in either of the APIs' forms; [] when the server returned none."""
    if raw is None:
        return []
    content = _field(raw, "content")
    if content:
        # The chat form (llama.cpp uses it for completions too): one entry per token, each
        # with its `top_logprobs` as a list.
        return [_content_logprob(item) for item in content]
    tokens = _field(raw, "tokens")
    if not tokens:
        return []
    tops = _field(raw, "top_logprobs") or [None] * len(tokens)
    logprobs = _field(raw, "token_logprobs") or []
    return [
        TokenLogprob(token=token, logprob=logprob if logprob is not None else 0.0, top=top or {})
        for token, logprob, top in zip(tokens, logprobs, tops, strict=False)
    ]


def _field(obj: Any, name: str) -> Any:
    """A field of the raw JSON (or of a client's typed object)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _content_logprob(item: Any) -> TokenLogprob:
    tops = _field(item, "top_logprobs") or []
    return TokenLogprob(
        token=_field(item, "token") or "",
        logprob=_field(item, "logprob") or 0.0,
        top={_field(t, "token") or "": _field(t, "logprob") or 0.0 for t in tops},
    )
