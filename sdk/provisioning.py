"""What a domain brings for the stack around its tools: its tables (`Migrations`), the demo
(`DemoQuestion`), stand-ins for its services on a laptop (`LocalService`), and what its
resources factory is given when a CPU worker starts (`ToolSetup`).

Apart from `Domain` because the programs that set a deployment up (`agentkeel up`, `demo`,
the worker's start) read them, never a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["DemoQuestion", "LocalService", "Migrations", "ToolSetup"]


@dataclass(frozen=True)
class Migrations:
    """SQL files of a domain's tables, applied once each in name order after the core's.

    `package` is a package holding the `.sql` files (in `folder`). Each file is recorded
    as `<prefix><file name without .sql>` in `schema_migrations`; the prefix defaults to
    `<domain name>/` so two domains never collide.
    """

    package: str
    folder: str = "migrations"
    prefix: str | None = None


@dataclass(frozen=True)
class DemoQuestion:
    """One question `agentkeel demo` asks (as `actor`, a role and subject, if given)."""

    question: str
    title: str = ""
    role: str | None = None
    subject: str | None = None
    shows_cache: bool = False
    """Asked with the cache lookup on, to show a hit on an earlier demo question's answer.
    The others skip the lookup (`RunOptions.refresh_cache`): each demo runs their steps."""


@dataclass(frozen=True)
class LocalService:
    """A stand-in for one of the domain's services that `agentkeel up` runs on a laptop.

    Started as `python -m <module> --host 127.0.0.1 --port <free port> <args>`, healthy when
    `GET <health_path>` answers 200; its URL fills the domain setting `setting` of the
    workers unless that setting is given."""

    name: str
    module: str
    setting: str
    args: tuple[str, ...] = ()
    health_path: str = "/healthz"


@dataclass(frozen=True)
class ToolSetup:
    """What a domain's `resources` factory receives when a CPU worker starts."""

    pool: Any
    """The worker's asyncpg pool on `AGENTKEEL_DATABASE_URL` (the domain's tables live
    beside agentkeel's, created by its `migrations`)."""
    http: Any
    """The worker's pooled `httpx.AsyncClient` (its own retries off: Temporal retries)."""
    settings: BaseModel | None
    """The domain's own settings (`Domain.settings`), read and checked at start."""
