"""`hostile_stdio_server.py`'s answers over streamable HTTP, on 127.0.0.1 in a background thread.

Each POSTed JSON-RPC message is answered with what the stdio server would write for it, as the
body of a JSON response or as one event of an SSE response (`sse=True`), byte for byte: a result
that is `5`, a body that is not JSON, an error with code -32000, malformed listing entries, ...
There is no session id and no GET stream (405), as a stateless server has none. One more tool,
`vanish`, is answered with an SSE stream that ends without an answer (the SDK's transport then
answers the call "SSE stream ended without a response", code -32000, itself), and `surrogate`
with a text that holds a lone surrogate escape (`"half \\ud83d"`).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import hostile_stdio_server as hostile

EXTRA = ("vanish", "surrogate")


def _app(*, sse: bool) -> Starlette:
    async def mcp_endpoint(request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405)
        message = json.loads(await request.body())
        name = (message.get("params") or {}).get("name")
        if name == "vanish":
            return Response(b"", media_type="text/event-stream")
        if name == "surrogate":
            text = '{"content":[{"type":"text","text":"half \\ud83d"}]}'
            lines = [f'{{"jsonrpc":"2.0","id":{json.dumps(message["id"])},"result":{text}}}']
        else:
            lines = hostile.respond(message)
        if message.get("method") == "tools/list":  # the two more listed last
            more = ",".join(f'{{"name":"{extra}","inputSchema":{{"type":"object"}}}}' for extra in EXTRA)
            lines = [lines[0].removesuffix("]}}") + f",{more}]}}}}"]
        if not lines:
            return Response(status_code=202)
        if sse:
            events = "".join(f"event: message\ndata: {line}\n\n" for line in lines)
            return Response(events, media_type="text/event-stream")
        return Response(lines[0], media_type="application/json")

    return Starlette(routes=[Route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"])])


@contextmanager
def serve_hostile(*options: str, sse: bool = False) -> Iterator[str]:
    """Serve the hostile answers, with the stdio server's command-line `options`; yield the MCP
    endpoint's URL."""
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    app = _app(sse=sse)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, name="hostile", daemon=True)
    thread.start()
    saved, hostile.OPTIONS = hostile.OPTIONS, list(options)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listening.close()
        hostile.OPTIONS = saved
