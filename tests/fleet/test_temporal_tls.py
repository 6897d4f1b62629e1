"""Reaching a Temporal that needs TLS, mTLS or an API key, through a real TLS endpoint.

nginx terminates TLS in front of the session's dev server (`tests.support.tls_proxy`); the
workers and clients take what they need from a `temporalio.envconfig` profile file or the
standard `TEMPORAL_*` variables, read by `Settings.from_env` as the Temporal CLI reads them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentkeel.client.agent_client import connect_client
from agentkeel.settings.model import Settings, StartupError
from agentkeel.workers.temporal_client import connect
from tests.support.agent_stack import StackFactory
from tests.support.tls_proxy import NGINX, Pki, make_pki, tls_proxy

pytestmark = pytest.mark.skipif(
    not os.access(NGINX, os.X_OK), reason="nginx (Debian nginx-light) is not installed"
)

API_KEY = "ak-test-0123456789"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _upstream(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


def _profile_file(folder: Path, address: str, pki: Pki) -> Path:
    path = folder / "temporal.toml"
    path.write_text(
        f"""
[profile.fleet]
address = "{address}"
namespace = "default"

[profile.fleet.tls]
server_ca_cert_path = "{pki.ca_cert}"
client_cert_path = "{pki.client_cert}"
client_key_path = "{pki.client_key}"
"""
    )
    return path


@pytest.fixture
def mtls_address(temporal_env: WorkflowEnvironment, pki: Pki, tmp_path: Path) -> Iterator[str]:
    """The proxy of a test whose workers poll through it: it outlives their stack."""
    with tls_proxy(tmp_path / "nginx", _upstream(temporal_env), pki) as address:
        yield address


async def test_a_run_goes_through_mtls_with_a_profile_file(
    mtls_address: str, pki: Pki, tmp_path: Path, make_stack: StackFactory
) -> None:
    config = _profile_file(tmp_path, mtls_address, pki)
    settings = Settings.from_env({"TEMPORAL_CONFIG_FILE": str(config), "TEMPORAL_PROFILE": "fleet"})
    assert settings.temporal_address == mtls_address
    assert "mTLS" in settings.temporal_described()
    # The workers poll through the proxy, and a run started through it is answered.
    stack = await make_stack(on=await connect(settings))
    stack.client = await connect_client(settings)
    result = await stack.ask("Where is order 1001?")
    assert result.answer and "1001" in result.answer


async def test_an_api_key_and_certificates_from_temporal_variables(
    temporal_env: WorkflowEnvironment, pki: Pki, tmp_path: Path
) -> None:
    with tls_proxy(tmp_path / "nginx", _upstream(temporal_env), pki, api_key=API_KEY) as address:
        env = pki.temporal_env(address, API_KEY)
        client: Client = await connect_client(Settings.from_env(env))
        assert client.namespace == "default"
        await client.count_workflows()  # a real call answered through the proxy

        with pytest.raises(StartupError, match="with mTLS and an API key"):
            await connect_client(Settings.from_env({**env, "TEMPORAL_API_KEY": "wrong"}))
        # agentkeel's own namespace setting wins over the profile's.
        ours = Settings.from_env({**env, "AGENTKEEL_TEMPORAL_NAMESPACE": "elsewhere"})
        assert ours.temporal_namespace == "elsewhere"
        assert ours.temporal_address == address


@pytest.mark.parametrize("who", ["no client certificate", "a stranger's certificate", "no CA"])
async def test_the_endpoint_refuses_what_it_must(
    temporal_env: WorkflowEnvironment, pki: Pki, tmp_path: Path, who: str
) -> None:
    with tls_proxy(tmp_path / "nginx", _upstream(temporal_env), pki) as address:
        env = {"TEMPORAL_ADDRESS": address, "TEMPORAL_TLS": "true"}
        if who != "no CA":
            env["TEMPORAL_TLS_SERVER_CA_CERT_PATH"] = str(pki.ca_cert)
        if who == "a stranger's certificate":
            env["TEMPORAL_TLS_CLIENT_CERT_PATH"] = str(pki.stranger_cert)
            env["TEMPORAL_TLS_CLIENT_KEY_PATH"] = str(pki.stranger_key)
        with pytest.raises(StartupError, match=f"cannot reach Temporal at {address}"):
            await connect_client(Settings.from_env(env))
