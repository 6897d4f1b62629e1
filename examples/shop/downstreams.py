"""The services behind the shop's tools, each capped across every run and worker
(`AGENTKEEL_DOWNSTREAM_<NAME>_CONCURRENCY`, `..._RATE`)."""

from __future__ import annotations

from agentkeel import Downstream

ORDERS_DB = Downstream("orders_db", "the shop's orders, customers and stock (Postgres)")
CARRIER = Downstream("carrier", "the carrier's tracking API (HTTP)", default_concurrency=8)
KNOWLEDGE = Downstream("knowledge", "the help-center search (Postgres full text)")
