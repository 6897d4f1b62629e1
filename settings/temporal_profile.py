"""How every agentkeel process reaches Temporal beyond an address: TLS, an API key, gRPC
metadata, read from a `temporalio.envconfig` profile as the Temporal CLI reads it.

The profile comes from `TEMPORAL_CONFIG_FILE` (else `~/.config/temporalio/temporal.toml`),
named by `TEMPORAL_PROFILE` (else `default`), overridden by `TEMPORAL_ADDRESS`,
`TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS`,
`TEMPORAL_TLS_SERVER_CA_CERT_PATH` (or `_DATA`), `TEMPORAL_TLS_CLIENT_CERT_PATH` (or `_DATA`),
`TEMPORAL_TLS_CLIENT_KEY_PATH` (or `_DATA`), `TEMPORAL_TLS_SERVER_NAME` and
`TEMPORAL_GRPC_META_<NAME>`. It is read once, in
`Settings.from_env`, so that a certificate file that is missing stops the process at start,
and so that settings built in code (tests, embedded stacks) never pick up a developer's
profile. `AGENTKEEL_TEMPORAL_ADDRESS` and `AGENTKEEL_TEMPORAL_NAMESPACE`, where set, win over
the profile's address and namespace: they are agentkeel's own settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio.envconfig import ClientConfigProfile
from temporalio.service import TLSConfig

from agentkeel.settings.errors import SettingsError

TEMPORAL_ENV_PREFIX = "TEMPORAL_"


@dataclass(frozen=True)
class TemporalProfile:
    """What a profile says, read and checked: files are already read into bytes."""

    address: str | None = None
    namespace: str | None = None
    api_key: str | None = None
    tls: bool | TLSConfig = False
    rpc_metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def secured(self) -> bool:
        """Whether it adds anything to a plain address and namespace."""
        return bool(self.api_key or self.tls or self.rpc_metadata)

    def connect_options(self) -> dict[str, Any]:
        """Keyword arguments of `Client.connect` besides the address and namespace."""
        options: dict[str, Any] = {"tls": self.tls}
        if self.api_key:
            options["api_key"] = self.api_key
        if self.rpc_metadata:
            options["rpc_metadata"] = dict(self.rpc_metadata)
        return options

    def describe(self) -> str:
        """How it connects, in words without secrets, for error messages."""
        parts = []
        if isinstance(self.tls, TLSConfig):
            parts.append("mTLS" if self.tls.client_cert else "TLS")
        elif self.tls:
            parts.append("TLS")
        if self.api_key:
            parts.append("an API key")
        return " with " + " and ".join(parts) if parts else ""


def read_temporal_profile(env: Mapping[str, str]) -> TemporalProfile:
    """The profile `env` selects, or a `SettingsError` naming what cannot be read."""
    name = env.get("TEMPORAL_PROFILE") or None
    try:
        profile = ClientConfigProfile.load(profile=name, override_env_vars=dict(env))
        options = profile.to_client_connect_config()  # reads the certificate files
    except Exception as exc:  # the bridge's errors are plain RuntimeErrors and OSErrors
        raise SettingsError(
            f"the Temporal client profile {name or 'default'!r} (TEMPORAL_CONFIG_FILE, "
            f"TEMPORAL_PROFILE, TEMPORAL_TLS_*) cannot be read: {exc}"
        ) from None
    tls = options.get("tls", False)
    if isinstance(tls, TLSConfig) and not (
        tls.server_root_ca_cert or tls.client_cert or tls.client_private_key or tls.domain
    ):
        tls = True  # TLS with the system's roots: the same, said plainly
    if isinstance(tls, TLSConfig) and bool(tls.client_cert) != bool(tls.client_private_key):
        raise SettingsError(
            "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or their _DATA, "
            "or a profile's client_cert and client_key) must be given together"
        )
    return TemporalProfile(
        address=options.get("target_host"),
        namespace=options.get("namespace"),
        api_key=options.get("api_key"),
        tls=tls,
        rpc_metadata=dict(options.get("rpc_metadata") or {}),
    )
