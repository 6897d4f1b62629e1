"""Command-line options shared by several `agentkeel` commands."""

from __future__ import annotations

import argparse

from agentkeel.schemas.actor import SYSTEM_ACTOR, Actor, Role


def add_actor_options(parser: argparse.ArgumentParser) -> None:
    """`--customer ID` or `--staff NAME`: whose authority the request carries."""
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--customer", type=int, metavar="ID", help="act as this customer")
    who.add_argument("--staff", metavar="NAME", help="act as this staff member")


def actor_of(args: argparse.Namespace) -> Actor:
    if args.customer is not None:
        return Actor(role=Role.CUSTOMER, customer_id=args.customer)
    if args.staff is not None:
        return Actor(role=Role.STAFF, name=args.staff)
    return SYSTEM_ACTOR
