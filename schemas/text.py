"""Constrained strings for identifiers and free text that reach SQL, Redis keys and prompts.

Postgres rejects NUL in text and control characters have no business in an identifier;
both are refused at the request's validation, so they fail the run at once with a named
error instead of deep inside an activity after retries.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
"""C0 controls and DEL, except tab, newline and carriage return (text may have lines), and
lone surrogates (JSON's `\\ud800`: no UTF-8 can carry one, so Postgres and Temporal refuse
it)."""


def _no_control_characters(value: str) -> str:
    found = _CONTROL.search(value)
    if found is not None:
        raise ValueError(
            f"contains the {_kind(found.group())} U+{ord(found.group()):04X} at {found.start()}"
        )
    return value


Identifier = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")
]
"""A tenant, conversation or request id: letters, digits and `._:@-`, at most 64."""

FreeText = Annotated[str, AfterValidator(_no_control_characters)]
"""Text a person wrote: any characters but control characters (tab and newlines allowed)."""

SafeName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100, strip_whitespace=True),
    AfterValidator(_no_control_characters),
]
"""A person's name or handle, as shown in records and approvals."""


def _kind(character: str) -> str:
    return "lone surrogate" if 0xD800 <= ord(character) <= 0xDFFF else "control character"
