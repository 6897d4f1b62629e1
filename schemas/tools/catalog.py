"""The catalog of the domain this process serves: every tool by name, and its digest.

One process serves one domain (`agentkeel.sdk.serving`), installed once at start, before
any workflow or activity runs; so the catalog the workflow validates plans against is
fixed for a worker's life, as determinism needs. `TOOLS`, `ACTIVITY_TOOLS` and
`SIDE_EFFECT_TOOLS` are live views of it: read them, never copy them at import.

A worker that serves a changed MCP tool list without stopping (`workers.generations`)
starts its successor beside it in a context of its own (`open_generation`): there the
domain installed is that generation's catalog, read by every task the generation starts
(its workflow activations, its activities), while the one before drains on its own. Code
outside any generation reads the newest catalog installed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from contextvars import ContextVar
from typing import Protocol

from temporalio import workflow

from agentkeel.schemas.tools.spec import ToolSpec
from agentkeel.schemas.tools.timers import WAIT

__all__ = [
    "ACTIVITY_TOOLS",
    "BUILT_IN_TOOLS",
    "INTENT_JOINER",
    "SIDE_EFFECT_TOOLS",
    "TOOLS",
    "ServedDomain",
    "catalog_version",
    "has_side_effect",
    "install_domain",
    "open_generation",
    "requested_side_effects",
    "served_domain",
    "set_domain_loader",
]

BUILT_IN_TOOLS: tuple[ToolSpec, ...] = (WAIT,)
"""Tools every domain has; they run in the workflow itself (no activity)."""
INTENT_JOINER = "+"
"""How a route names a request with several intents: `refund+order_status`."""


class ServedDomain(Protocol):
    """What the catalog reads of a domain: the SDK's `Domain` is one (`agentkeel.sdk`)."""

    @property
    def name(self) -> str: ...

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    def intent_tools(self) -> Mapping[str, Sequence[str]]: ...


class _Catalog:
    """The served domain's tools, computed once when it is installed."""

    def __init__(self, domain: ServedDomain) -> None:
        self.domain = domain
        self.tools: dict[str, ToolSpec] = {s.name: s for s in (*domain.tools, *BUILT_IN_TOOLS)}
        self.activity_tools = {n: s for n, s in self.tools.items() if not s.runs_in_workflow}
        self.side_effects = frozenset(n for n, s in self.tools.items() if not s.idempotent)
        self.version = _digest(domain, self.tools)


_current: _Catalog | None = None
_default_loader: Callable[[], ServedDomain] | None = None


class _Generation:
    """One worker generation's catalog, filled by the first `install_domain` within it."""

    catalog: _Catalog | None = None


_generation: ContextVar[_Generation | None] = ContextVar("agentkeel_catalog", default=None)


def open_generation() -> None:
    """From here on in the current context (and in the tasks it starts), `install_domain`
    installs a catalog of this context's own, beside any other generation's."""
    _generation.set(_Generation())


def set_domain_loader(loader: Callable[[], ServedDomain]) -> None:
    """How a process that installed no domain gets one on first use: the SDK registers
    its loader (the domain `AGENTKEEL_DOMAIN` names) when `agentkeel` is imported."""
    global _default_loader
    _default_loader = loader


def install_domain(domain: ServedDomain) -> ServedDomain:
    """Serve `domain` in this process: done once at start by workers, clients and tests.

    Installing another domain later is refused (the same value again is a no-op): runs in
    flight would otherwise see their catalog change under them. Within a generation
    (`open_generation`) it installs that generation's catalog, once, and makes it the
    newest."""
    global _current
    generation = _generation.get()
    if generation is not None:
        if generation.catalog is None:
            generation.catalog = _current = _Catalog(domain)
        elif generation.catalog.domain is not domain:
            raise RuntimeError("this worker generation already serves a catalog")
        return domain
    if _current is not None and _current.domain is not domain:
        raise RuntimeError(
            f"this process serves domain {_current.domain.name!r}; it cannot switch to "
            f"{domain.name!r} (use one process per domain)"
        )
    if _current is None:
        _current = _Catalog(domain)
    return domain


def _catalog() -> _Catalog:
    global _current
    generation = _generation.get()
    if generation is not None and generation.catalog is not None:
        return generation.catalog
    if _current is None:
        if workflow.unsafe.in_sandbox():
            # Importing a domain (its clients, its I/O) inside a sandboxed workflow fails
            # in odd places: workers and replayers install it before any workflow runs.
            raise RuntimeError(
                "no domain is installed in this process: call install_domain(load_domain()) "
                "before starting a worker or a replayer"
            )
        if _default_loader is None:
            raise RuntimeError("no domain is installed in this process and no loader is set")
        # First use without an explicit install: the domain the environment names.
        install_domain(_default_loader())
    assert _current is not None
    return _current


def served_domain() -> ServedDomain:
    """The domain this process serves (loaded from `AGENTKEEL_DOMAIN` on first use); the
    SDK's `active_domain()` gives it its full type."""
    return _catalog().domain


class _ToolsView(Mapping[str, ToolSpec]):
    def __init__(self, *, activities_only: bool) -> None:
        self._activities_only = activities_only

    def _tools(self) -> dict[str, ToolSpec]:
        catalog = _catalog()
        return catalog.activity_tools if self._activities_only else catalog.tools

    def __getitem__(self, name: str) -> ToolSpec:
        return self._tools()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools())

    def __len__(self) -> int:
        return len(self._tools())


class _SideEffectsView(Set[str]):
    def __contains__(self, name: object) -> bool:
        return name in _catalog().side_effects

    def __iter__(self) -> Iterator[str]:
        return iter(_catalog().side_effects)

    def __len__(self) -> int:
        return len(_catalog().side_effects)


TOOLS: Mapping[str, ToolSpec] = _ToolsView(activities_only=False)
"""A tool's name is its activity type name: a contract, in every run's history. (Built-ins
such as `wait` run in the workflow itself and have no activity.)"""
ACTIVITY_TOOLS: Mapping[str, ToolSpec] = _ToolsView(activities_only=True)
"""The tools a worker serves as activities."""
SIDE_EFFECT_TOOLS: Set[str] = _SideEffectsView()
"""Tools that change something: never cached, never replayed, idempotency keys, approval."""


def has_side_effect(tool: str) -> bool:
    """True for a side-effecting tool, and for a name the catalog does not know (unsafe)."""
    return tool in SIDE_EFFECT_TOOLS or tool not in TOOLS


def withdrawn_reason(tool: str) -> str | None:
    """Why `tool` is not in the catalog although it would be: its MCP server could not be
    reached or listed at start, or it cannot be served as listed; None if not so."""
    withdrawn = _withdrawn(_catalog().domain)
    if tool in withdrawn:
        return withdrawn[tool]
    for name, reason in withdrawn.items():
        if name.endswith("*") and tool.startswith(name[:-1]):
            return reason
    return None


def catalog_version() -> str:
    """A short digest of everything about the served domain's tools that changes what a
    cached result means: part of every cache key, so another domain or a changed tool
    starts cold."""
    return _catalog().version


def requested_side_effects(intent: str) -> frozenset[str]:
    """The side-effecting tools a request of `intent` asks for: a plan may use these only.

    Decided from the router's reading of the request itself, before any tool has run, so
    text inside tool output (a carrier event, an article) can never ask for an effect.
    """
    intents = _catalog().domain.intent_tools()
    # A request may carry several intents at once ("refund+order_status").
    tools = {tool for part in intent.split(INTENT_JOINER) for tool in intents.get(part, ())}
    return frozenset(tools) & _catalog().side_effects


def _digest(domain: ServedDomain, tools: Mapping[str, ToolSpec]) -> str:
    described = {
        "domain": domain.name,
        "tools": [
            {
                "name": spec.name,
                "args": spec.args_model.model_json_schema(),
                "result": spec.result_model.model_json_schema(),
                "idempotent": spec.idempotent,
                "ttl": spec.cache_ttl.total_seconds() if spec.cache_ttl else None,
            }
            for spec in tools.values()
        ],
    }
    withdrawn = _withdrawn(domain)
    if withdrawn:  # a server left out at start, and back, is another catalog
        described["withdrawn"] = sorted(withdrawn)
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:12]


def _withdrawn(domain: ServedDomain) -> Mapping[str, str]:
    """`Domain.withdrawn_tools` (a served domain of another kind withdraws nothing)."""
    withdrawn: Mapping[str, str] = getattr(domain, "withdrawn_tools", {})
    return withdrawn
