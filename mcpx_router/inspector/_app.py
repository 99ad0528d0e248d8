"""The inspector's ASGI app: one page, its static files, and the JSON and SSE endpoints behind it.

Example:
    ```python
    from starlette.routing import Mount
    from mcpx_router.inspector import Inspector

    inspector = Inspector(router, auth=lambda request: request.user.is_authenticated)
    routes.append(Mount("/inspect", app=inspector))
    print(inspector.url("http://127.0.0.1:8000/inspect"))   # ...?token=...
    ```
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from importlib import resources
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .._adapter import OpenAIPeerToolAdapter
from .._errors import UsageError
from ..peers._router import Router
from ..peers._topic_peers import TopicMembership
from . import _snapshot as snapshot
from ._feed import Feed, SSEEndpoint, as_json
from ._guard import LOOPBACK_HOSTS, AuthHook, Guard, Receive, Scope, Send, new_token

__all__ = ["Inspector"]

STATIC = {"app.js": "text/javascript", "app.css": "text/css", "index.html": "text/html"}
_DEFAULT: Any = object()


class Inspector:
    """An ASGI app that shows a live Router (or adapter) to a developer, in the browser.

    Args:
        target: The Router (peers, their states and events) or a bare adapter.
        token: The session token every request must carry (default: a fresh random one). None
            turns the token off, which is allowed only with an `auth` hook of the host's.
        auth: The host's own check, given the Starlette `Request`: true lets it through
            (sync or async); it runs after the host and origin checks, before the token's.
        read_only: Refuse to call tools (everything else still shows).
        allowed_hosts: The host names a request's `Host` may carry (default: the loopback names).
        topic: An MCPx topic the Router joined, to show its participants and presence.
        events: How many recent events are kept while a page is open.
    """

    def __init__(
        self,
        target: Router | OpenAIPeerToolAdapter,
        *,
        token: str | None = _DEFAULT,
        auth: AuthHook | None = None,
        read_only: bool = False,
        allowed_hosts: Iterable[str] = LOOPBACK_HOSTS,
        topic: TopicMembership | None = None,
        events: int = 2000,
    ) -> None:
        if isinstance(target, Router):
            self._target = snapshot.Target(target.adapter, target, topic)
        elif isinstance(target, OpenAIPeerToolAdapter):
            if topic is not None:
                raise UsageError("a topic is shown with the Router that joined it, not with a bare adapter")
            self._target = snapshot.Target(target)
        else:
            raise UsageError(f"the inspector looks at a Router or an adapter, not {type(target).__name__}")
        if token is _DEFAULT:
            token = new_token()
        if token is None and auth is None:
            raise UsageError("an inspector without a session token needs the host's own auth hook (auth=)")
        self.read_only = bool(read_only)
        self._model_json: tuple[tuple[int, int | None], bytes] | None = None
        """The model's view as last sent, and the catalogue version and budget it was made at."""
        self.feed = Feed(self._target, events)
        routes = [
            Route("/", self._page),
            Route("/static/{name}", self._static),
            Route("/api/overview", self._overview),
            Route("/api/model", self._model),
            Route("/api/names", self._names),
            Route("/api/tool", self._tool),
            Route("/api/select", self._select),
            Route("/api/call", self._call, methods=["POST"]),
            Route("/api/events", SSEEndpoint(self.feed)),
        ]
        self._guard = Guard(Starlette(routes=routes), token=token, allowed_hosts=allowed_hosts, auth=auth)

    @property
    def token(self) -> str | None:
        """The session token (None when the host's auth hook stands in for it)."""
        return self._guard.token

    def url(self, base: str) -> str:
        """The address to open: `base` (where the app is served) with the token to swap for a cookie."""
        base = base.rstrip("/") + "/"
        return base if self.token is None else f"{base}?token={self.token}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._guard(scope, receive, send)

    # -- the page ---------------------------------------------------------------------------

    async def _page(self, request: Request) -> Response:
        return _packaged("index.html")

    async def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC or name == "index.html":
            return PlainTextResponse("not found\n", 404)
        return _packaged(name)

    # -- JSON -------------------------------------------------------------------------------

    async def _overview(self, request: Request) -> Response:
        return JSONResponse(snapshot.overview(self._target, read_only=self.read_only))

    async def _model(self, request: Request) -> Response:
        adapter = self._target.adapter
        key = (adapter.version, adapter.max_tools)
        kept = self._model_json
        if kept is None or kept[0] != key:
            view = snapshot.model_view(self._target)
            kept = self._model_json = (key, await anyio.to_thread.run_sync(snapshot.sized_model_view, view))
        return Response(kept[1], media_type="application/json")

    async def _names(self, request: Request) -> Response:
        return JSONResponse(snapshot.names(self._target))

    async def _tool(self, request: Request) -> Response:
        name = request.query_params.get("name", "")
        detail = snapshot.tool_detail(self._target, name)
        if detail is None:
            return _problem(404, f"no tool is published as {name[:100]!r}")
        return JSONResponse(detail)

    async def _select(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        given = request.query_params.get("max_tools") or ""
        try:
            max_tools = int(given) if given else None
        except ValueError:
            return _problem(400, f"max_tools must be a whole number, not {given[:20]!r}")
        if max_tools is not None and max_tools < 1:
            return _problem(400, "max_tools must be at least 1")
        try:
            return JSONResponse(await snapshot.selection(self._target, query, max_tools))
        except UsageError as exc:
            return _problem(400, str(exc))

    async def _call(self, request: Request) -> Response:
        if self.read_only:
            return _problem(403, "calls are disabled: this inspector is read-only (--read-only)")
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _problem(400, 'the body must be a JSON object like {"name": ..., "arguments": {...}}')
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            return _problem(400, 'the body must be a JSON object with the tool\'s public name in "name"')
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            return _problem(400, '"arguments" must be a JSON object')
        name = body["name"]
        target = self._target.router or self._target.adapter
        started = time.perf_counter()
        outcome = await target.call(name, arguments)
        seconds = time.perf_counter() - started
        tool = outcome.tool
        raw = (
            None
            if outcome.result is None
            else outcome.result.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        images = [
            {"mime": block.get("mimeType"), "data": block.get("data")}
            for block in (raw or {}).get("content", [])
            if block.get("type") == "image"
        ]
        answer = {
            "name": name,
            "peer": None if tool is None else tool.peer,
            "tool": None if tool is None else tool.tool,
            "group": outcome.group,
            "ms": round(seconds * 1000, 3),
            "model": {
                "text": outcome.text,
                "is_error": outcome.is_error,
                "error_type": outcome.error_type,
                "images": images,
            },
            "raw": raw,
        }
        self.feed.add(
            "TryCall",
            as_json(
                {
                    "name": name,
                    "peer": answer["peer"],
                    "tool": answer["tool"],
                    "ms": answer["ms"],
                    "error_type": outcome.error_type,
                }
            ),
        )
        return JSONResponse(answer)


def _problem(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status)


def _packaged(name: str) -> Response:
    data = resources.files("mcpx_router.inspector").joinpath("static", name).read_bytes()
    return Response(data, media_type=STATIC[name])
