"""Fixtures offered to every tier (`unit/`, `stack/`, `fleet/`), defined in `tests/support/`.

The servers (`tests.support.services`: the Temporal dev server, Postgres, Redis, the carrier
service), workers in the test process (`tests.support.agent_stack`) and real models
(`tests.support.models`, `tests.support.llama_server`). `tests/unit/conftest.py` takes the
servers and models away from the unit tier.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentkeel.sdk.serving import active_domain
from tests.support.agent_stack import make_stack as make_stack
from tests.support.agent_stack import stack as stack
from tests.support.llama_server import llama_server as llama_server
from tests.support.models import http_engine as http_engine
from tests.support.models import model_dir as model_dir
from tests.support.models import vllm_engine as vllm_engine
from tests.support.models import vllm_server as vllm_server
from tests.support.services import admin_dsn as admin_dsn
from tests.support.services import carrier_url as carrier_url
from tests.support.services import client as client
from tests.support.services import database_url as database_url
from tests.support.services import db as db
from tests.support.services import hand_services_over, report_services, take_services_over
from tests.support.services import orders_db as orders_db
from tests.support.services import redis as redis
from tests.support.services import redis_url as redis_url
from tests.support.services import stack_dir as stack_dir
from tests.support.services import template_database as template_database
from tests.support.services import temporal_env as temporal_env
from tests.support.services import time_skipping_env as time_skipping_env

# The domain these tests serve (the example shop), loaded before any worker or replayer
# runs a workflow: inside the sandbox a domain cannot be imported.
active_domain()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    report_services(terminalreporter)


def pytest_sessionfinish(session: pytest.Session) -> None:
    hand_services_over(session)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller: a worker finished (its services go in the summary)."""
    take_services_over(node)
