"""Refusing browsers: what a web page can make a browser send, the gateway does not act on.

Without API keys the loopback gateway trusts its caller (requests act as their body says),
so a page the user has open must not be able to reach it: by DNS rebinding (the page's own
name resolving to 127.0.0.1, so the browser sends that name as `Host`), or by a cross-site
request (`fetch` with `mode: "no-cors"`, or a form). Three checks, before any route runs:

- `Host` must name the gateway: a loopback name or address, its bind address, or one of
  `AGENTKEEL_GATEWAY_ALLOWED_HOSTS` (else `421`);
- a request a browser marks as cross-site (`Origin` of another host, `Sec-Fetch-Site` other
  than `same-origin` or `none`) is refused (`403`);
- a body must say it is JSON (`415`): a page may send `text/plain`, form or multipart bodies
  without a CORS preflight, and FastAPI reads a body of any other type as JSON.

With API keys only the last applies: a key is a secret no page holds, and a browser app
holding one of its own may call from its origin.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from agentkeel.gateway.problems import problem_bytes

JSON_MEDIA_TYPE = "application/json"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SAFE_FETCH_SITES = frozenset({"same-origin", "none"})
"""`none`: the user typed the address or followed a bookmark; no page sent it."""


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BrowserGuard:
    """ASGI middleware for the three checks; `keyed`: only the content-type check."""

    def __init__(self, app: ASGIApp, *, keyed: bool, hosts: Iterable[str]) -> None:
        self.app = app
        self.keyed = keyed
        self.hosts = frozenset(h.strip().lower() for h in hosts if h.strip())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = None if self.keyed else self._browser_refusal(headers)
        refusal = refusal or _content_type_refusal(scope["method"], headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, detail = refusal
        await _problem(send, status, detail)

    def allows_host(self, host: str) -> bool:
        return is_loopback(host) or host in self.hosts

    def _browser_refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        host = _hostname(headers.get("host", ""))
        if not self.allows_host(host):
            return 421, (
                f"this gateway does not answer for host {host or '(none)'!r}: it has no API "
                "keys, so it serves loopback names only (add a name to "
                "AGENTKEEL_GATEWAY_ALLOWED_HOSTS to serve it)"
            )
        site = headers.get("sec-fetch-site", "").lower()
        if site and site not in SAFE_FETCH_SITES:
            return 403, f"refused a {site} request from a web page: this gateway has no API keys"
        origin = headers.get("origin")
        if origin is not None and not self._same_origin(origin, headers.get("host", "")):
            return 403, f"refused a request from origin {origin!r}: this gateway has no API keys"
        return None

    def _same_origin(self, origin: str, host_header: str) -> bool:
        """A page of the gateway's own origin, or of a host the operator allowed; `null`
        (a sandboxed frame, a file) is no origin the gateway can trust."""
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        if parts.netloc.lower() == host_header.lower():
            return True
        return (parts.hostname or "") in self.hosts


def _content_type_refusal(method: str, headers: dict[str, str]) -> tuple[int, str] | None:
    if method not in BODY_METHODS or not _has_body(headers):
        return None
    media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type == JSON_MEDIA_TYPE:
        return None
    sent = media_type or "none"
    return 415, f"a request body must be {JSON_MEDIA_TYPE} (Content-Type), not {sent}"


def _has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "transfer-encoding" in headers


def _hostname(host_header: str) -> str:
    """The name in a `Host` header, without its port (`[::1]:8080` is `::1`)."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host


async def _problem(send: Send, status: int, detail: str) -> None:
    body, media_type = problem_bytes(status, detail, "browser-refused" if status == 403 else None)
    headers = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
