"""Which domain a process serves: `AGENTKEEL_DOMAIN`, else an installed entry point, else the
example shop.

`AGENTKEEL_DOMAIN=package.module:attribute` names a `Domain` value (or a function of no
arguments returning one). Without it, a package that declares an entry point in the group
`agentkeel.domains` is served (exactly one may be installed); without either, the example
shop, so a fresh checkout's `agentkeel demo` runs it.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.metadata import entry_points

from agentkeel.sdk.domain import Domain, DomainError

__all__ = ["DEFAULT_DOMAIN", "ENTRY_POINT_GROUP", "domain_spec", "load_domain"]

ENTRY_POINT_GROUP = "agentkeel.domains"
DEFAULT_DOMAIN = "agentkeel.examples.shop:domain"
_VARIABLE = "AGENTKEEL_DOMAIN"


def domain_spec(setting: str | None = None) -> str:
    """The `module:attribute` to serve: the setting, else the one entry point, else the shop."""
    if setting is None:
        setting = os.environ.get(_VARIABLE, "")
    if setting.strip():
        return setting.strip()
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    if len(found) > 1:
        listed = ", ".join(f"{ep.name} ({ep.value})" for ep in found)
        raise DomainError(
            f"several domains are installed ({listed}): set {_VARIABLE} to the one to serve"
        )
    return found[0].value if found else DEFAULT_DOMAIN


def _import(module_name: str) -> object:
    """Import `module_name`; a package in the current directory is found too (the
    `agentkeel` command, unlike `python -m`, does not put it on the path)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        here = os.getcwd()
        if exc.name != top or here in sys.path or not os.path.exists(os.path.join(here, top)):
            raise
        sys.path.append(here)
        return importlib.import_module(module_name)


_loaded: dict[str, Domain] = {}


def load_domain(setting: str | None = None) -> Domain:
    """Import and check the domain `domain_spec(setting)` names; the same value every time
    for one spec (a factory is called once per process)."""
    spec = domain_spec(setting)
    if spec not in _loaded:
        _loaded[spec] = _load(spec)
    return _loaded[spec]


def _load(spec: str) -> Domain:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise DomainError(f"{_VARIABLE} must be package.module:attribute, got {spec!r}")
    try:
        module = _import(module_name)
    except Exception as exc:
        # A broken tool (a bad signature), a syntax error, a failing import: one line.
        what = f"{type(exc).__name__}: {exc}"
        raise DomainError(f"{_VARIABLE}={spec}: cannot import {module_name} ({what})") from None
    value = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise DomainError(f"{_VARIABLE}={spec}: {module_name} has no {attribute}") from None
    if callable(value) and not isinstance(value, Domain):
        try:
            value = value()
        except Exception as exc:
            raise DomainError(f"{_VARIABLE}={spec}: {attribute}() failed ({exc})") from None
    if not isinstance(value, Domain):
        raise DomainError(
            f"{_VARIABLE}={spec} is a {type(value).__name__}, not an agentkeel.Domain"
        )
    return value
