"""A cap on request bodies, counted as they arrive (chunked bodies have no length to check)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentkeel.gateway.problems import problem_bytes


class BodyLimit:
    """Answers `413` for a body over `max_bytes`: at once when its `Content-Length` says so,
    else as soon as the bytes received pass it (nothing more is read into memory)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        detail = f"request body over {self.max_bytes} bytes"
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await _too_large(send, detail)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Raised where the route reads its body: FastAPI answers it as a 413.
                    raise HTTPException(413, detail)
            return message

        await self.app(scope, counted, send)


async def _too_large(send: Send, detail: str) -> None:
    body, media_type = problem_bytes(413, detail)
    headers = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
