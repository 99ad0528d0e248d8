"""`mcpx-router chat`: talk to an OpenAI-compatible model that uses the tools of the configured peers.

The endpoint comes from the environment, as for the `openai` SDK: `OPENAI_BASE_URL` (default: the
OpenAI API), `OPENAI_API_KEY` and `OPENAI_MODEL` (or `--model`). Each user message (from `--prompt`,
else one per line of standard input) is answered with `run_chat`; the conversation carries on from
one message to the next, and every tool call is shown with the start of its answer.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import threading
from collections.abc import AsyncGenerator, Mapping, Sequence
from concurrent.futures import CancelledError
from contextlib import aclosing
from typing import Any, Literal, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream
from openai import APIError, AsyncOpenAI

from .._adapter import OpenAIPeerToolAdapter
from .._console import fail, run_command
from .._errors import ToolCallFormatError
from ..codemode import CodeMode
from ..loop import run_chat
from ..peers import PeerSpec
from ..peers._router import Router
from ._connect import join_peers, status_line

__all__ = ["run_chat_command"]

Strict = Literal["auto", "on", "off"]
_STRICT: dict[str, bool | None] = {"auto": None, "on": True, "off": False}
_SHOWN = 300
"""Characters of a tool's answer printed after the call."""


def run_chat_command(
    *,
    peers: Mapping[str, PeerSpec],
    prompts: Sequence[str] = (),
    model: str | None = None,
    system: str | None = None,
    max_turns: int = 10,
    strict: Strict = "auto",
    media: Literal["describe", "attach"] = "describe",
    max_tools: int = 128,
    text_calls: bool = False,
    connect_timeout: float = 30.0,
    stdin: TextIO | None = None,
    stats_file: str | None = None,
    code_mode: bool = False,
) -> int:
    """Converse with the peers that connect; return the exit status (0 ok, 1 failed, 2 unusable settings)."""
    model = model or os.environ.get("OPENAI_MODEL")
    if not model:
        return _fail("no model: set OPENAI_MODEL or pass --model", 2)
    key = os.environ.get("OPENAI_API_KEY")
    if not key and not os.environ.get("OPENAI_BASE_URL"):
        return _fail("no endpoint: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)", 2)
    if code_mode and text_calls:
        return _fail("--code-mode offers run_python and find_tools only: leave --text-calls off", 2)
    if code_mode and importlib.util.find_spec("pydantic_monty") is None:
        return _fail("--code-mode needs pydantic-monty: pip install 'mcpx-router[codemode]'", 2)
    settings = {"strict": _STRICT[strict], "media": media, "max_tools": max_tools, "stats_file": stats_file}
    source = _given(prompts) if prompts else _read(stdin or sys.stdin)
    limits = (max_turns, connect_timeout, text_calls, code_mode)
    return run_command(lambda: _converse(peers, source, model, system, limits, settings, key or "none"))


async def _converse(
    peers: Mapping[str, PeerSpec],
    prompts: AsyncGenerator[str, None],
    model: str,
    system: str | None,
    limits: tuple[int, float, bool, bool],
    settings: dict[str, Any],
    key: str,
) -> int:
    max_turns, connect_timeout, text_calls, code_mode = limits
    async with (
        aclosing(prompts),
        OpenAIPeerToolAdapter(**settings) as adapter,
        Router(adapter=adapter, connect_timeout=connect_timeout) as router,
        AsyncOpenAI(api_key=key) as client,
        contextlib.AsyncExitStack() as stack,
    ):
        code = await stack.enter_async_context(CodeMode(adapter)) if code_mode else None
        async with status_line() as status:
            failed = await join_peers(router, peers, status)
        if peers and len(failed) == len(peers):
            return _fail("no server could connect; there is nothing to chat with", 1)
        joined = {peer: router.adapter.tools_of(peer) for peer in peers if peer in router.peers}
        tools = sum(len(names) for names in joined.values())
        listing = ", ".join(f"{peer} ({len(names)})" for peer, names in joined.items())
        print(f"{tools} tools from {len(joined)} peers: {listing or 'none'}; model {model}", flush=True)
        if failed:
            print(f"  without {', '.join(failed)}: could not connect (see above)", flush=True)
        for name, reasons in adapter.strict_report().items():
            print(f"  {name} is offered without strict mode: {'; '.join(reasons)}", flush=True)
        history: list[Any] = [{"role": "system", "content": system}] if system else []
        async for prompt in prompts:
            print(f"user: {prompt}", flush=True)
            history.append({"role": "user", "content": prompt})
            start = len(history)
            try:
                result = await run_chat(
                    client,
                    adapter,
                    model=model,
                    messages=history,
                    max_turns=max_turns,
                    text_calls=text_calls,
                    code_mode=code,
                )
            except APIError as exc:
                return _fail(f"the model endpoint answered with an error: {exc}", 1)
            except ToolCallFormatError as exc:  # e.g. a call without an id: no valid answer exists
                return _fail(f"the model endpoint sent tool calls that cannot be answered: {exc}", 1)
            _show_tool_calls(result.messages[start:])
            history = result.messages
            if result.stopped == "max_turns":
                print(f"(no answer after {result.turns} requests; --max-turns is {max_turns})", flush=True)
            else:
                print(f"assistant: {result.text or ''}\n", flush=True)
    return 0


def _show_tool_calls(messages: Sequence[Any]) -> None:
    names: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                names[call["id"]] = function.get("name", "?")
                print(f"  call {function.get('name')}({function.get('arguments') or ''})", flush=True)
        elif message.get("role") == "tool":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            text = " ".join(text.split())
            shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
            print(f"  -> {names.get(message.get('tool_call_id'), '?')}: {shown}", flush=True)


async def _given(prompts: Sequence[str]) -> AsyncGenerator[str, None]:
    for prompt in prompts:
        yield prompt


async def _read(stream: TextIO) -> AsyncGenerator[str, None]:
    """One prompt per non-blank line, read in a thread of its own so that the peers keep being served.

    The thread is a daemon: a Ctrl-C at the prompt ends the command without waiting for a line.
    """
    interactive = stream.isatty()
    send, receive = anyio.create_memory_object_stream[str](0)
    token = anyio.lowlevel.current_token()
    threading.Thread(target=_read_lines, args=(stream, send, token), daemon=True).start()
    async with receive:
        while True:
            if interactive:
                print("you> ", end="", flush=True)
            try:
                line = await receive.receive()
            except anyio.EndOfStream:
                return
            if line.strip():
                yield line.strip()


def _read_lines(
    stream: TextIO, send: MemoryObjectSendStream[str], token: anyio.lowlevel.EventLoopToken
) -> None:
    """Hand each line of `stream` to the event loop until the stream or the reader ends."""
    try:
        while line := stream.readline():
            anyio.from_thread.run(send.send, line, token=token)
    except (anyio.BrokenResourceError, RuntimeError, CancelledError):
        return  # the reader, or the event loop, is gone
    except (OSError, ValueError) as exc:  # closed, or not text: no more prompts
        print(f"mcpx-router: cannot read standard input: {exc}", file=sys.stderr, flush=True)
    finally:
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody is left to tell
            anyio.from_thread.run_sync(send.close, token=token)


def _fail(message: str, status: int) -> int:
    return fail(message, status)
