"""`hostile_stdio_server.py`'s answers over streamable HTTP, on 127.0.0.1 in a background thread.

Each POSTed JSON-RPC message is answered with what the stdio server would write for it, as the
body of a JSON response or as one event of an SSE response (`sse=True`), byte for byte: a result
that is `5`, a body that is not JSON, an error with code -32000, malformed listing entries, ...
There is no session id and no GET stream (405), as a stateless server has none. With
`legacy=True` the legacy HTTP+SSE transport is served instead: each answer is an event of the
stream GET /sse opened. One more tool,
`vanish`, is answered with an SSE stream that ends without an answer (the SDK's transport then
answers the call "SSE stream ended without a response", code -32000, itself), and `surrogate`
with a text that holds a lone surrogate escape (`"half \\ud83d"`).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from . import hostile_stdio_server as hostile

EXTRA = ("vanish", "surrogate")


def _answers(message: dict[str, Any]) -> list[str] | None:
    """The lines answering `message` (None for `vanish`, which is answered by no line)."""
    name = (message.get("params") or {}).get("name")
    if name == "vanish":
        return None
    if name == "surrogate":
        text = '{"content":[{"type":"text","text":"half \\ud83d"}]}'
        return [f'{{"jsonrpc":"2.0","id":{json.dumps(message["id"])},"result":{text}}}']
    lines = hostile.respond(message)
    if message.get("method") == "tools/list":  # the two more listed last
        more = ",".join(f'{{"name":"{extra}","inputSchema":{{"type":"object"}}}}' for extra in EXTRA)
        lines = [lines[0].removesuffix("]}}") + f",{more}]}}}}"]
    return lines


def _app(*, sse: bool) -> Starlette:
    async def mcp_endpoint(request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405)
        lines = _answers(json.loads(await request.body()))
        if lines is None:
            return Response(b"", media_type="text/event-stream")
        if not lines:
            return Response(status_code=202)
        if sse:
            events = "".join(f"event: message\ndata: {line}\n\n" for line in lines)
            return Response(events, media_type="text/event-stream")
        return Response(lines[0], media_type="application/json")

    return Starlette(routes=[Route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"])])


def _legacy_app() -> Starlette:
    """The legacy HTTP+SSE transport: answers are events of the one stream GET /sse opened."""
    queues: list[asyncio.Queue[str]] = []

    async def sse_endpoint(request: Request) -> Response:
        queue: asyncio.Queue[str] = asyncio.Queue()
        queues.append(queue)

        async def events() -> AsyncIterator[str]:
            yield "event: endpoint\ndata: /messages/?session_id=1\n\n"
            while True:
                yield f"event: message\ndata: {await queue.get()}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def messages(request: Request) -> Response:
        for line in _answers(json.loads(await request.body())) or []:
            queues[-1].put_nowait(line)
        return Response(status_code=202)

    return Starlette(routes=[Route("/sse", sse_endpoint), Route("/messages/", messages, methods=["POST"])])


@contextmanager
def serve_hostile(*options: str, sse: bool = False, legacy: bool = False) -> Iterator[str]:
    """Serve the hostile answers, with the stdio server's command-line `options`; yield the MCP
    endpoint's URL (with `legacy`, the SSE endpoint's of the legacy HTTP+SSE transport)."""
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    app = _legacy_app() if legacy else _app(sse=sse)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, name="hostile", daemon=True)
    thread.start()
    saved, hostile.OPTIONS = hostile.OPTIONS, list(options)
    try:
        yield f"http://127.0.0.1:{port}/{'sse' if legacy else 'mcp'}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listening.close()
        hostile.OPTIONS = saved
