"""Which Temporal the command line acts on, and saying so.

One order, whatever the command: the flags (`--address`, `--namespace`), then the
environment (`AGENTKEEL_TEMPORAL_ADDRESS`, else `TEMPORAL_ADDRESS`; the namespace likewise),
then the Temporal client profile (`--profile`, else `TEMPORAL_PROFILE`, else the config
file's `default`), then the local stack running from this state directory (`agentkeel up`),
then the default `127.0.0.1:7233`. The stack's Redis and Postgres are used only when its
Temporal is: an address chosen otherwise is another deployment, whose stores are not the
laptop's. Each command says on stderr, as it connects, which one it used and why, so an
operator never acts on a cluster they did not mean.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from agentkeel.cli.stack.supervisor import read_endpoints
from agentkeel.settings.model import ENV_PREFIX, Settings

__all__ = ["Target", "add_target_options", "profile_environ", "resolve_target", "say_target"]


@dataclass(frozen=True)
class Target:
    settings: Settings
    """The settings with the chosen address and namespace (and the stack's stores if it)."""
    source: str
    """Where the address came from, in words: `--address`, `AGENTKEEL_TEMPORAL_ADDRESS`,
    `profile 'prod'`, `the running local stack`, `the default`."""


def add_target_options(parser: argparse.ArgumentParser) -> None:
    """`--address`, `--namespace`, `--profile`: which Temporal (see the module's order)."""
    group = parser.add_argument_group("Temporal")
    group.add_argument("--address", metavar="HOST:PORT", help="Temporal's frontend address")
    group.add_argument("--namespace", metavar="NAME", help="the Temporal namespace")
    group.add_argument(
        "--profile", metavar="NAME", help="a Temporal client profile (TEMPORAL_CONFIG_FILE)"
    )


def profile_environ(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with `--profile` as `TEMPORAL_PROFILE`: the settings read that profile."""
    env = dict(environ)
    profile = getattr(args, "profile", None)
    if profile:
        env["TEMPORAL_PROFILE"] = profile
    return env


def _from_environment(environ: Mapping[str, str], name: str) -> str | None:
    for variable in (f"{ENV_PREFIX}TEMPORAL_{name}", f"TEMPORAL_{name}"):
        if environ.get(variable, "").strip():
            return variable
    return None


def resolve_target(
    settings: Settings, args: argparse.Namespace, environ: Mapping[str, str], *, stack: bool = True
) -> Target:
    """The Temporal `args` and `environ` choose for `settings` (read from `environ`);
    `stack`: whether a running local stack may be chosen."""
    address, namespace = getattr(args, "address", None), getattr(args, "namespace", None)
    update: dict[str, str] = {}
    if namespace:
        update["temporal_namespace"] = namespace
    if address:
        update["temporal_address"] = address
        return Target(settings.model_copy(update=update), "--address")
    variable = _from_environment(environ, "ADDRESS")
    if variable is not None:
        return Target(settings.model_copy(update=update), variable)
    if settings.temporal_from_profile:
        profile = environ.get("TEMPORAL_PROFILE") or "default"
        return Target(settings.model_copy(update=update), f"profile {profile!r}")
    endpoints = read_endpoints(settings) if stack else None
    if endpoints is not None:
        update |= {
            "temporal_address": endpoints.temporal_address,
            "redis_url": settings.redis_url or endpoints.redis_url,
            "database_url": settings.database_url or endpoints.database_url,
        }
        return Target(settings.model_copy(update=update), "the running local stack")
    return Target(settings.model_copy(update=update), "the default")


def say_target(command: str, target: Target) -> None:
    """One line on stderr: the address, the namespace, and why (stdout stays the output)."""
    s = target.settings
    print(
        f"agentkeel {command}: Temporal {s.temporal_address}, namespace "
        f"{s.temporal_namespace!r} (from {target.source})",
        file=sys.stderr,
    )
