"""The served domain at a worker's start: loaded, its own settings read, its resources open.

Everything a domain gets wrong is said here, in one line, before the worker polls: an
import that fails, a setting of its own missing or out of range, resources that cannot
open. A worker never starts half a domain.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from pydantic import BaseModel, ValidationError

from agentkeel.sdk.domain import Domain, DomainError, ToolSetup
from agentkeel.sdk.loading import load_domain
from agentkeel.sdk.serving import install_domain
from agentkeel.settings.model import Settings, SettingsError

__all__ = ["check_domain", "domain_settings", "domain_tool_resources", "serve_domain"]


def serve_domain(settings: Settings) -> Domain:
    """Load the domain `AGENTKEEL_DOMAIN` names (or the installed one, or the shop) and
    install it as this process's catalog; a `SettingsError` naming the cause otherwise."""
    try:
        return install_domain(load_domain(settings.domain))
    except DomainError as exc:
        raise SettingsError(str(exc)) from None


def check_domain(settings: Settings) -> Domain:
    """Load and check the domain without installing it (a worker installs it with the
    tools its MCP servers list); a `SettingsError` naming the cause otherwise."""
    try:
        return load_domain(settings.domain)
    except DomainError as exc:
        raise SettingsError(str(exc)) from None


def domain_settings(domain: Domain, environ: Mapping[str, str] | None = None) -> BaseModel | None:
    """The domain's own settings from `AGENTKEEL_<NAME>_<FIELD>`, checked."""
    model = domain.settings
    if model is None:
        return None
    env = os.environ if environ is None else environ
    prefix = domain.env_prefix
    values = {k[len(prefix) :].lower(): v for k, v in env.items() if k.startswith(prefix) and v}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        var = prefix + field.upper()
        if error["type"] == "extra_forbidden":
            known = ", ".join(prefix + name.upper() for name in model.model_fields)
            raise SettingsError(
                f"{var} is not a setting of domain {domain.name} ({known})"
            ) from None
        if error["type"] == "missing":
            raise SettingsError(f"domain {domain.name} needs {var}") from None
        raise SettingsError(f"{var}: {error['msg']}, got {error.get('input')!r}") from None


@asynccontextmanager
async def domain_tool_resources(
    domain: Domain, *, pool: Any, http: Any, settings: BaseModel | None
) -> AsyncIterator[Any]:
    """What the domain's tools use, open for the worker's life: what its `resources` factory
    opens, or without one the `ToolSetup` itself (the worker's pool, HTTP client and the
    domain's settings, read by `domain_settings`)."""
    setup = ToolSetup(pool=pool, http=http, settings=settings)
    if domain.resources is None:
        yield setup
        return
    async with domain.resources(setup) as resources:
        yield resources
