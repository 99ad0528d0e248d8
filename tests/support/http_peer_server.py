"""An MCPServer over streamable HTTP on 127.0.0.1, run as a subprocess by the Router tests.

    python tests/support/http_peer_server.py PORT [--log FILE] [--sse]

With `--sse` it serves the legacy HTTP+SSE transport instead (`/sse`, messages to `/messages/`).

It exits when its stdin closes, so it cannot outlive the test process that started it.

Tools: ``echo(text)``, ``header(name)``, ``pid()``, ``slow(seconds)`` (with progress; a
cancellation is appended to the log file as ``cancelled slow``), and ``add_tool(name)``, which
adds an echoing tool and announces it: on `subscriptions/listen` streams (2026-07-28) and as a legacy
``notifications/tools/list_changed``. ``ask(question)`` samples the client's model and
``roots()`` lists the client's roots (server-to-client requests before 2026-07-28, an
`InputRequiredResult` at 2026-07-28). Resource ``peer://pid`` (the process id), prompt ``hello(name)``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Annotated

import anyio
import mcp_types as mt
import uvicorn
from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.server.mcpserver.resolve import ListRoots, Sample


def _sample(question: str) -> Sample:
    message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=question))
    return Sample([message], max_tokens=50, system_prompt="Answer in one word.")


def _roots() -> ListRoots:
    return ListRoots()


def build(log: str | None) -> MCPServer:
    server = MCPServer("http-peer")

    def record(line: str) -> None:
        if log:
            with open(log, "a") as handle:
                handle.write(line + "\n")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of one HTTP header of this request ("" if absent)."""
        return (ctx.headers or {}).get(name.lower(), "")

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    async def slow(seconds: float, ctx: Context) -> str:
        """Answer after some seconds, reporting progress."""
        try:
            steps = max(1, int(seconds * 10))
            for step in range(steps):
                await ctx.report_progress(step, steps)
                await anyio.sleep(seconds / steps)
        except anyio.get_cancelled_exc_class():
            record("cancelled slow")
            raise
        return "slow done"

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Offer one more tool."""
        server.add_tool(lambda text: text, name=name, description="An added tool.")
        if (ctx.protocol_version or "") >= "2026":
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return "added"

    @server.tool()
    def ask(question: str, answer: Annotated[mt.CreateMessageResult, Resolve(_sample)]) -> str:
        """Ask the client's model a question (sampling, as the protocol version allows)."""
        content = answer.content
        return content.text if isinstance(content, mt.TextContent) else f"[{content.type}]"

    @server.tool()
    def roots(listed: Annotated[mt.ListRootsResult, Resolve(_roots)]) -> str:
        """The client's roots, one a line."""
        return "\n".join(str(root.uri) for root in listed.roots)

    @server.resource("peer://pid", name="pid", description="The server's process id.")
    def pid_resource() -> str:
        return str(os.getpid())

    @server.prompt(description="Say hello.")
    def hello(name: str) -> str:
        return f"Hello {name}!"

    return server


def _exit_with_parent() -> None:
    """Stop when stdin closes: the test that started us is gone, even if it could not stop us."""
    sys.stdin.buffer.read()
    os._exit(0)


def main() -> None:
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--log", default=None)
    parser.add_argument("--sse", action="store_true")
    options = parser.parse_args()
    server = build(options.log)
    app = server.sse_app() if options.sse else server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
