"""Command-line options shared by several `agentkeel` commands."""

from __future__ import annotations

import argparse

from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor
from agentkeel.sdk.serving import active_domain


class InvalidActor(ValueError):
    """An actor option the served domain refuses: said at once, before any run starts."""


def add_actor_options(parser: argparse.ArgumentParser) -> None:
    """`--as ROLE[:SUBJECT]` and `--name NAME`: whose authority the request carries (a role
    of the served domain, checked by it at once)."""
    parser.add_argument(
        "--as", dest="as_actor", metavar="ROLE[:SUBJECT]", help="act as this role (and subject)"
    )
    parser.add_argument("--name", dest="actor_name", metavar="NAME", help="the actor's name")


def actor_of(args: argparse.Namespace) -> Actor:
    name = getattr(args, "actor_name", None)
    if getattr(args, "as_actor", None) is not None:
        role, _, subject = args.as_actor.partition(":")
        if not role:
            raise InvalidActor("--as needs a role: --as ROLE or --as ROLE:SUBJECT")
        actor = Actor(role=role, subject=subject or None, name=name)
        problem = active_domain().actor_problem(actor.role, actor.subject)
        if problem is not None:
            raise InvalidActor(problem)
        return actor
    return SYSTEM_ACTOR if name is None else Actor(name=name)
