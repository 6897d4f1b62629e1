"""The unit tier uses no server: no Temporal, no Postgres, no Redis, no carrier service, no
model server, no local stack. The fixtures that give one are refused here, naming the tier
where a test that needs them belongs (`tests/stack`: the stack in the test process;
`tests/fleet`: processes, model servers, a whole local stack)."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

IN_STACK = (
    "temporal_env",
    "time_skipping_env",
    "client",
    "admin_dsn",
    "template_database",
    "database_url",
    "db",
    "orders_db",
    "redis_url",
    "redis",
    "carrier_url",
    "make_stack",
    "stack",
)
"""Fixtures of `tests.support.services` and `tests.support.agent_stack`."""
IN_FLEET = ("stack_dir", "model_dir", "vllm_engine", "vllm_server", "http_engine", "llama_server")
"""A whole local stack's state directory, and the real models (`tests.support.models`,
`tests.support.llama_server`)."""


def _refused(name: str, tier: str) -> Any:
    """A fixture named `name` that fails the test asking for it, saying where it belongs."""

    @pytest.fixture(scope="session", name=name)
    def refused() -> NoReturn:
        pytest.fail(
            f"the unit tier uses no server: move this test to tests/{tier} "
            f"(it asks for the fixture {name!r})",
            pytrace=False,
        )

    return refused


for _name in IN_STACK:
    globals()[f"_refused_{_name}"] = _refused(_name, "stack")
for _name in IN_FLEET:
    globals()[f"_refused_{_name}"] = _refused(_name, "fleet")
