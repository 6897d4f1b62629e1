"""The domain this process serves, with its full type: installed once, then read.

The registry itself is the tool catalog's (`schemas.tools.catalog`), which reads only a
domain's name, tools and intents; this module hands back the whole `Domain` (roles,
patterns, rules) to the core that consults it, and gives the catalog the loader a process
uses when it installed nothing.
"""

from __future__ import annotations

from agentkeel.schemas.tools import catalog
from agentkeel.sdk.domain import Domain
from agentkeel.sdk.loading import load_domain

__all__ = ["active_domain", "install_domain"]

catalog.set_domain_loader(load_domain)


def install_domain(domain: Domain) -> Domain:
    """Serve `domain` in this process: done once at start by workers, clients and tests.

    Installing another domain later is refused (the same value again is a no-op): runs in
    flight would otherwise see their catalog change under them."""
    catalog.install_domain(domain)
    return domain


def active_domain() -> Domain:
    """The domain this process serves (loaded from `AGENTKEEL_DOMAIN` on first use)."""
    served = catalog.served_domain()
    if not isinstance(served, Domain):
        raise TypeError(f"the installed domain is a {type(served).__name__}, not a Domain")
    return served
