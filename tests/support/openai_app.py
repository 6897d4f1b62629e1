"""The frame of a fake OpenAI-compatible server at the model boundary: `/v1/models` listing
one model, and the endpoints a test scripts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def openai_app(
    model: str,
    *,
    owned_by: str,
    chat: Handler | None = None,
    completions: Handler | None = None,
) -> web.Application:
    """`/v1/models` naming `model` (owned by `owned_by`: servers are told apart by it) and
    `/v1/chat/completions`, `/v1/completions` where handlers are given."""

    async def models(_: web.Request) -> web.Response:
        data = [{"id": model, "object": "model", "created": 0, "owned_by": owned_by}]
        return web.json_response({"object": "list", "data": data})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    if chat is not None:
        app.router.add_post("/v1/chat/completions", chat)
    if completions is not None:
        app.router.add_post("/v1/completions", completions)
    return app
