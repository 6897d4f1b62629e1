"""A real TLS endpoint in front of the Temporal dev server: nginx terminating TLS (and mTLS)
and passing gRPC on, with certificates made by a CA generated for the test.

The dev server has no TLS of its own; Temporal Cloud and self-hosted clusters with mTLS do.
nginx (Debian's `nginx-light` carries `grpc_pass`) checks the client certificate against the
CA and, where one is given, the `authorization` header against an API key, as Temporal
Cloud does.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from agentkeel.settings.ports import free_port

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path
    """A client certificate from another CA, which the proxy must refuse."""
    stranger_key: Path

    def temporal_env(self, address: str, api_key: str) -> dict[str, str]:
        """The `TEMPORAL_*` variables of a client of `address` with this PKI's client
        certificate and `api_key`, as the Temporal CLI reads them."""
        return {
            "TEMPORAL_ADDRESS": address,
            "TEMPORAL_NAMESPACE": "default",
            "TEMPORAL_API_KEY": api_key,
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(self.ca_cert),
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(self.client_cert),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(self.client_key),
        }


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _ca(common: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return cert, key


def _leaf(
    common: str,
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    usage: x509.ObjectIdentifier,
    cert_path: Path,
    key_path: Path,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(ca[0].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca[1], hashes.SHA256())
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, key_path)


def make_pki(folder: Path) -> Pki:
    """A CA, a server certificate for localhost / 127.0.0.1, a client certificate of the
    CA and one of a stranger's CA."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = _ca("agentkeel test CA")
    (folder / "ca.pem").write_bytes(ca[0].public_bytes(serialization.Encoding.PEM))
    server, client = ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH
    _leaf("temporal", ca, server, folder / "server.pem", folder / "server.key")
    _leaf("worker", ca, client, folder / "client.pem", folder / "client.key")
    _leaf(
        "stranger", _ca("another CA"), ExtendedKeyUsageOID.CLIENT_AUTH,
        folder / "stranger.pem", folder / "stranger.key",
    )  # fmt: skip
    return Pki(
        ca_cert=folder / "ca.pem",
        server_cert=folder / "server.pem",
        server_key=folder / "server.key",
        client_cert=folder / "client.pem",
        client_key=folder / "client.key",
        stranger_cert=folder / "stranger.pem",
        stranger_key=folder / "stranger.key",
    )


def _config(folder: Path, port: int, upstream: str, pki: Pki, mtls: bool, api_key: str) -> str:
    client_check = f"ssl_client_certificate {pki.ca_cert}; ssl_verify_client on;" if mtls else ""
    # An API key is carried as `authorization: Bearer <key>`; a wrong one gets gRPC's
    # UNAUTHENTICATED (16), as from Temporal Cloud.
    key_check = (
        f'if ($http_authorization != "Bearer {api_key}") {{ '
        'add_header grpc-status 16 always; add_header grpc-message "bad api key" always; '
        "add_header content-type application/grpc always; return 200; }"
        if api_key
        else ""
    )
    temp = folder / "temp"
    return f"""
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi; uwsgi_temp_path {temp}/uwsgi; scgi_temp_path {temp}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {pki.server_cert};
    ssl_certificate_key {pki.server_key};
    {client_check}
    location / {{
      {key_check}
      grpc_pass grpc://{upstream};
      grpc_read_timeout 600s;
      grpc_send_timeout 600s;
      client_max_body_size 0;
    }}
  }}
}}
"""


@contextmanager
def tls_proxy(
    folder: Path, upstream: str, pki: Pki, *, mtls: bool = True, api_key: str = ""
) -> Iterator[str]:
    """nginx terminating TLS on a free port in front of `upstream`; yields `127.0.0.1:port`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "temp").mkdir(exist_ok=True)
    port = free_port()
    conf = folder / "nginx.conf"
    conf.write_text(_config(folder, port, upstream, pki, mtls, api_key))
    proc = subprocess.Popen(
        [NGINX, "-p", str(folder), "-c", str(conf), "-e", str(folder / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                said = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"nginx exited: {said}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)
