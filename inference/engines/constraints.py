"""Checking an output against its constraint, the same way for every engine.

Constrained decoding makes invalid output impossible only while the backend enforces
the constraint and generation runs to its end; a server that ignores the parameter,
or a `max_tokens` that cuts the document, still yields invalid text. So every result
is checked here before a policy sees it.
"""

from __future__ import annotations

import json
from typing import Any

from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    Constraint,
    ConstraintViolationError,
    JsonSchemaConstraint,
)


def check_output(constraint: Constraint | None, text: str, finish_reason: str | None) -> Any:
    """Validate `text` against `constraint`.

    Returns:
        The decoded JSON document for a JSON constraint; None otherwise.

    Raises:
        ConstraintViolationError: the text does not satisfy the constraint.
    """
    if constraint is None:
        return None
    cut = " (generation stopped at max_tokens)" if finish_reason == "length" else ""
    if isinstance(constraint, ChoiceConstraint):
        if text.strip() not in constraint.choices:
            raise ConstraintViolationError(
                f"output {text[:80]!r} is not one of {constraint.choices}{cut}", text=text
            )
        return None
    return _check_json(constraint, text, cut)


def _check_json(constraint: JsonSchemaConstraint, text: str, cut: str) -> Any:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ConstraintViolationError(f"output is not JSON: {exc}{cut}", text=text) from exc
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema ships with both model extras
        # Without it only JSON-ness is checked; the caller's pydantic model checks the rest.
        return document
    validator_cls = jsonschema.validators.validator_for(constraint.json_schema)
    error = jsonschema.exceptions.best_match(
        validator_cls(constraint.json_schema).iter_errors(document)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise ConstraintViolationError(
            f"output does not match the schema at {where}: {error.message}{cut}", text=text
        )
    return document
