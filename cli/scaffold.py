"""`agentkeel init NAME`: a domain package a newcomer can run at once.

It writes `NAME/` with one read tool and one side effect over a table of its own, its
migration and seed, a model-free planner (patterns), demo questions, a test, and a README
with the settings that serve it. `docs/domains.md` explains each part.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from agentkeel.cli.scaffold_templates import FILES

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def scaffold_domain(name: str, where: str = ".") -> int:
    """Write the package `name` under `where`; exit status 0, or 1 with one line why not."""
    if not _NAME.match(name) or name in ("agentkeel", "test", "tests"):
        print(
            f"agentkeel init: {name!r} must be a lower-case Python name (letters, digits, _)",
            file=sys.stderr,
        )
        return 1
    root = Path(where) / name
    if root.exists():
        print(f"agentkeel init: {root} already exists", file=sys.stderr)
        return 1
    for relative, template in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(name=name), encoding="utf-8")
    print(f"created the domain package {root}/ ({len(FILES)} files)")
    print(f"serve it:  AGENTKEEL_DOMAIN={name}:domain agentkeel demo   (from {Path(where)})")
    return 0
