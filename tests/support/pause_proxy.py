"""A TCP proxy on 127.0.0.1 whose connections can be frozen: a connection that dies quietly.

`pause()` stops forwarding in both directions on every connection open at that moment, without
closing anything (like a host switched off or a NAT that forgot the flow); connections made
later pass. `resume()` lets the frozen ones flow again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import anyio.abc


class _Link:
    def __init__(self) -> None:
        self.flowing = anyio.Event()
        self.flowing.set()


class PauseProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._links: list[_Link] = []
        self.url = ""
        self.connections = 0

    def pause(self) -> None:
        for link in self._links:
            link.flowing = anyio.Event()

    def resume(self) -> None:
        for link in self._links:
            link.flowing.set()

    async def _pipe(self, link: _Link, src: anyio.abc.ByteStream, dst: anyio.abc.ByteStream) -> None:
        try:
            while True:
                await link.flowing.wait()
                data = await src.receive()
                await link.flowing.wait()  # paused meanwhile: hold what was read
                await dst.send(data)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return  # either side closed: the link ends

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        self.connections += 1
        link = _Link()
        self._links.append(link)
        try:
            async with client, await anyio.connect_tcp(*self._target) as upstream:
                async with anyio.create_task_group() as tg:

                    async def one_way(src: anyio.abc.ByteStream, dst: anyio.abc.ByteStream) -> None:
                        await self._pipe(link, src, dst)
                        tg.cancel_scope.cancel()

                    tg.start_soon(one_way, client, upstream)
                    tg.start_soon(one_way, upstream, client)
        except OSError:
            return  # the upstream refused or reset: the client's connection just ends
        finally:
            self._links.remove(link)


@asynccontextmanager
async def pause_proxy(target_url: str) -> AsyncIterator[PauseProxy]:
    """Proxy to the host and port of `target_url` (http://); yields the proxy with its `url` set."""
    parts = urlsplit(target_url)
    assert parts.hostname is not None and parts.port is not None
    proxy = PauseProxy(parts.hostname, parts.port)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as tg:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        proxy.url = f"http://127.0.0.1:{port}"
        tg.start_soon(listener.serve, proxy._handle)
        try:
            yield proxy
        finally:
            tg.cancel_scope.cancel()
