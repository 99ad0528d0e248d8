"""A local OpenAI-compatible endpoint on 127.0.0.1 that replays wire-format responses.

The real `openai` SDK talks to it over HTTP. Each request is recorded (path and JSON body) so a
test can check what the SDK sent; each response comes from a script: a list of wire-format
dicts, or callables that build one from the request body. Callables run in a worker thread, so
they may call back into the test's event loop with `anyio.from_thread.run(..., token=...)`.

Chat Completions (`/v1/chat/completions`) and Responses (`/v1/responses`) are served. A request
with `"stream": true` gets the same reply as server-sent events: chunks for Chat (tool-call
arguments split across chunks), typed events ending in `response.completed` for Responses.
Embeddings (`/v1/embeddings`) are answered by an embedder (texts in, vectors out; by default the
deterministic `HashingEmbedder`), without taking a reply from the script.
"""

from __future__ import annotations

import base64
import itertools
import json
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
EMBEDDINGS = "/v1/embeddings"


@dataclass
class Replay:
    """The script to play and the requests received."""

    script: list[Reply]
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    base_url: str = ""
    embed: Callable[[list[str]], list[list[float]]] | None = None
    floats_only: bool = False
    """Answer embeddings as lists of floats whatever `encoding_format` asked (as some endpoints do)."""

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path]


_ids = itertools.count(1)


def chat_completion(message: dict[str, Any], *, model: str = "replay-model") -> dict[str, Any]:
    """A wire-format Chat Completions response holding one assistant message."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{next(_ids)}",
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
    """A Chat Completions tool call, as it appears in an assistant message."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def response(output: list[dict[str, Any]], *, model: str = "replay-model") -> dict[str, Any]:
    """A wire-format Responses API response with these output items."""
    return {
        "id": f"resp_{next(_ids)}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": {
            "input_tokens": 1,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2,
        },
    }


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A Responses `function_call` output item."""
    return {
        "type": "function_call",
        "id": f"fc_{next(_ids)}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def output_message(text: str) -> dict[str, Any]:
    """A Responses assistant `message` output item holding one `output_text` part."""
    return {
        "type": "message",
        "id": f"msg_{next(_ids)}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _chat_chunks(completion: dict[str, Any]) -> Iterator[bytes]:
    """The completion as `chat.completion.chunk`s: role, content, each tool call in two parts, finish."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    if message.get("content"):
        text = message["content"]
        yield chunk({"content": text[: len(text) // 2]})
        yield chunk({"content": text[len(text) // 2 :]})
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": arguments[:half]},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
    yield chunk({}, choice["finish_reason"])
    yield b"data: [DONE]\n\n"


def _response_events(done: dict[str, Any]) -> Iterator[bytes]:
    """The response as typed Responses streaming events, ending in `response.completed`."""
    numbers = itertools.count()

    def event(kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, "sequence_number": next(numbers), **fields}, kind)

    yield event("response.created", response={**done, "status": "in_progress", "output": []})
    for index, item in enumerate(done["output"]):
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item={**item, "content": []})
            for part_index, part in enumerate(item["content"]):
                where = {"item_id": item["id"], "output_index": index, "content_index": part_index}
                yield event("response.output_text.delta", **where, delta=part["text"], logprobs=[])
                yield event("response.output_text.done", **where, text=part["text"], logprobs=[])
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            where = {"item_id": item["id"], "output_index": index}
            yield event("response.function_call_arguments.delta", **where, delta=item["arguments"])
            yield event("response.function_call_arguments.done", **where, arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=done)


def _embeddings(replay: Replay, body: dict[str, Any]) -> Response:
    """An embeddings reply: one vector per input text, floats, in order."""
    from mcpx_router.testing import HashingEmbedder

    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or not texts:
        return JSONResponse({"error": {"message": "input must be a non-empty list of strings"}}, 400)
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        return JSONResponse({"error": {"message": f"unknown encoding_format {encoding!r}"}}, 400)
    vectors = (replay.embed or HashingEmbedder())(texts)
    if encoding == "base64" and not replay.floats_only:  # little-endian float32, as OpenAI sends
        encoded: list[Any] = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in vectors]
    else:
        encoded = [list(v) for v in vectors]
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(encoded)]
    used = sum(len(t.split()) for t in texts)
    usage = {"prompt_tokens": used, "total_tokens": used}
    return JSONResponse({"object": "list", "data": data, "model": body.get("model", "m"), "usage": usage})


def _app(replay: Replay) -> Starlette:
    lock = threading.Lock()

    async def handle(request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        with lock:
            replay.requests.append((request.url.path, body))
            if request.url.path == EMBEDDINGS:
                return _embeddings(replay, body)
            if not replay.script:
                return JSONResponse({"error": {"message": "replay script exhausted", "type": "test"}}, 500)
            reply = replay.script.pop(0)
        if callable(reply):
            reply = await anyio.to_thread.run_sync(reply, body)
        if body.get("stream") is not True:
            return JSONResponse(reply)
        events = _chat_chunks(reply) if request.url.path == CHAT else _response_events(reply)

        async def stream() -> AsyncIterator[bytes]:
            for data in events:
                yield data

        return StreamingResponse(stream(), media_type="text/event-stream")

    routes = [Route(path, handle, methods=["POST"]) for path in (CHAT, RESPONSES, EMBEDDINGS)]
    return Starlette(routes=routes)


@contextmanager
def replay_openai(
    script: list[Reply],
    *,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
    floats_only: bool = False,
) -> Iterator[Replay]:
    """Serve `script` on 127.0.0.1 in a background thread; `replay.base_url` ends in `/v1`.
    Embeddings requests are answered by `embed` (default: a `HashingEmbedder`), in the
    `encoding_format` asked for (lists of floats always, with `floats_only`)."""
    replay = Replay(script=list(script), embed=embed, floats_only=floats_only)
    # Bound here, not by uvicorn later: another test process cannot take the port in between.
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(_app(replay), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listening]}, name="openai-replay", daemon=True
    )
    thread.start()
    try:
        # The socket listens already: a request waits in its backlog until the server takes it.
        replay.base_url = f"http://127.0.0.1:{port}/v1"
        yield replay
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listening.close()


async def one_turn(
    api: str, adapter: Any, calls: list[tuple[str, str, str]], *, prompt: str, safety: float = 20.0
) -> tuple[Any, list[dict[str, Any]]]:
    """Run the loop through the real SDK for one turn of `calls` (id, name, arguments) and a final
    answer, on the Chat ("chat") or Responses API; return the loop's result and the request bodies."""
    from openai import AsyncOpenAI

    from mcpx_router.loop import run_chat, run_responses

    script: list[Reply]
    if api == "chat":
        turn = chat_completion({"content": None, "tool_calls": [tool_call(*c) for c in calls]})
        script = [turn, chat_completion({"content": "done"})]
    else:
        script = [response([function_call(*c) for c in calls]), response([output_message("done")])]
    with replay_openai(script) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            with anyio.fail_after(safety):
                if api == "chat":
                    result = await run_chat(
                        client, adapter, model="m", messages=[{"role": "user", "content": prompt}]
                    )
                else:
                    result = await run_responses(client, adapter, model="m", input=prompt)
    return result, replay.bodies(CHAT if api == "chat" else RESPONSES)
