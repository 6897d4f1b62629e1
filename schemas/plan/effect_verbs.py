"""The verbs a tool's name says it acts with: how a request refuses a tool that names no
asking words (`ToolSpec.asked_by`), such as an MCP server's ("don't delete note A").

Only refusals are read with them (`schemas.plan.asked`, from `TARGETS`): a sentence that
never uses one still asks, so a paraphrase ("get rid of note B") is not refused for it.
"""

from __future__ import annotations

import re

__all__ = ["effect_verbs"]

_GROUPS = (
    ("delete", "remove", "erase", "trash", "destroy", "purge", "wipe"),
    ("create", "add", "append", "make", "insert"),
    ("update", "edit", "change", "modify", "set", "rename", "patch", "replace"),
    ("send", "email", "mail", "message", "post", "publish", "notify", "reply"),
    ("cancel", "abort", "stop", "kill", "revoke", "disable", "close", "archive"),
    ("move", "transfer", "pay", "charge", "refund", "withdraw", "deposit"),
    ("book", "reserve", "schedule", "order", "buy", "purchase", "submit"),
    ("approve", "reject", "assign", "merge", "deploy", "grant", "invite", "share", "upload"),
)
_OF = {verb: group for group in _GROUPS for verb in group}
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def effect_verbs(tool: str) -> tuple[str, ...]:
    """The verbs (and the verbs that mean the same) in `tool`'s name: `notes_delete_note`
    -> delete, remove, erase, ...; none where its name has none."""
    verbs: list[str] = []
    for part in _PARTS.findall(tool):
        for verb in _OF.get(part.casefold(), ()):
            if verb not in verbs:
                verbs.append(verb)
    return tuple(verbs)
