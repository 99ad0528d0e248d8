"""A local OpenAI-compatible endpoint on 127.0.0.1 that replays wire-format responses.

The real `openai` SDK talks to it over HTTP. Each request is recorded (path and JSON body) so a
test can check what the SDK sent; each response comes from a script: a list of wire-format
dicts, or callables that build one from the request body.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Replay:
    """The script to play and the requests received."""

    script: list[Reply]
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    base_url: str = ""

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path]


def chat_completion(message: dict[str, Any], *, model: str = "replay-model") -> dict[str, Any]:
    """A wire-format Chat Completions response holding one assistant message."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _app(replay: Replay) -> Starlette:
    lock = threading.Lock()

    async def handle(request: Request) -> JSONResponse:
        body = json.loads(await request.body() or b"{}")
        with lock:
            replay.requests.append((request.url.path, body))
            if not replay.script:
                return JSONResponse({"error": {"message": "replay script exhausted", "type": "test"}}, 500)
            reply = replay.script.pop(0)
        return JSONResponse(reply(body) if callable(reply) else reply)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", handle, methods=["POST"]),
            Route("/v1/responses", handle, methods=["POST"]),
        ]
    )


@contextmanager
def replay_openai(script: list[Reply]) -> Iterator[Replay]:
    """Serve `script` on 127.0.0.1 in a background thread; `replay.base_url` ends in `/v1`."""
    replay = Replay(script=list(script))
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(_app(replay), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, name="openai-replay", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the replay endpoint did not start")
        time.sleep(0.01)
    replay.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield replay
    finally:
        server.should_exit = True
        thread.join(timeout=10)
