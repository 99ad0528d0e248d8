"""One process of the storm benchmark (`_gwstorm.py` starts them): the calling pairs, or a share of the storm.

    python -m benchmarks.mcpx._gwstorm_part --role pairs|storm --url URL --presence batched|each ...

Each runs its own event loop with a loop-lag probe (`_lag.py`), so that a stall is seen in the
process that stalled, and talks to the orchestrator over its standard input and output, one line
at a time:

- `pairs`: warms the gateway up, connects `2 * pairs` participants, prints `ready`; on `go` each
  requester keeps one `tools/call`-sized request in flight to its responder, which answers at
  once; on `stop` it stops, lets what is in flight come back, and prints its JSON: every round
  trip (wall-clock time it came back, seconds, requester), its lag samples, the close codes it got.
- `storm`: prints `ready`; on `go T` (a wall-clock time) its participants connect at random
  moments within `spread` s of T, a refused attempt tried again after 0.5 to 1 s, as reconnecting
  clients do; once each of them has every frame of its joining (see `_gwstorm.py`) it prints
  its JSON (when it connected and filled, frames, retries), and its lag samples on `stop`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from functools import partial

from ._gwload import _RESPONSE, Client, Load
from ._lag import LagProbe


class PartLoad(Load):
    returned: list[tuple[float, float, str]]
    """Round trips: (wall-clock time the answer came, seconds, the requester)."""

    def on_text(self, client: Client, head: bytearray, now: float) -> None:
        if bytes(head[:8]) == _RESPONSE:
            sent = self.sent_at.get(int(head[8:16]))
            if sent is not None:
                self.returned.append((round(time.time(), 4), now - sent, client.pid))
        super().on_text(client, head, now)

    async def pairs(self, pids: list[str], line: asyncio.StreamReader) -> dict[str, object]:
        self.returned = []
        await self.warm_up()
        self.clients = await self.connect(pids, self.presence)
        await self.until(partial(self.filled, self.gateway_frames, len(self.clients)), 60)
        half = len(self.clients) // 2
        requesters, responders = self.clients[:half], self.clients[half:]
        for requester, responder in zip(requesters, responders, strict=True):
            requester.peer, responder.peer = responder.pid, requester.pid
        _say("ready")
        await line.readline()  # go
        self.sending = True
        for requester in requesters:
            self.request(requester, requester.peer)
        await line.readline()  # stop
        self.sending = False
        await self.until(lambda: not self.sent_at, 60)
        return {"round_trips": self.returned, "closed": self.closed}

    async def storm(
        self, pids: list[str], spread: float, quiet: float, line: asyncio.StreamReader
    ) -> dict[str, object]:
        loop = asyncio.get_running_loop()
        retries = 0
        _say("ready")
        start = float((await line.readline()).split()[1])
        await asyncio.sleep(max(0.0, start - time.time()))

        async def one(pid: str) -> Client:
            nonlocal retries
            await asyncio.sleep(random.uniform(0, spread))
            presence = "none" if random.random() < quiet else self.presence
            while True:  # as a reconnecting client does: a refused attempt is tried again
                try:
                    _, client = await loop.create_connection(
                        lambda: Client(self, pid, self._upgrade_request(pid, presence)),
                        self.host,
                        self.port,
                    )
                    await client.upgraded
                except OSError:
                    retries += 1
                    await asyncio.sleep(random.uniform(0.5, 1.0))
                    continue
                client.quiet = presence == "none"
                self.clients.append(client)
                return client

        await asyncio.gather(*(one(pid) for pid in pids))
        connected = time.time()
        await self.until(partial(self.filled, 0, len(pids)), 600)
        return {
            "connected_at": connected,
            "filled_at": time.time(),
            "quiet": sum(c.quiet for c in self.clients),
            "frames": self.frames,
            "retries": retries,
            "closed": self.closed,
        }


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def main_async(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    line = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(line), sys.stdin)
    probe = LagProbe()
    probing = asyncio.ensure_future(probe.run())
    presence = None if args.presence == "each" else args.presence
    load = PartLoad(args.url, "gateway", args.server_pid, presence)
    pids = [f"p{i}" for i in range(args.first, args.first + args.count)]
    if args.role == "pairs":
        result = await load.pairs(pids, line)
    else:
        result = await load.storm(pids, args.spread, args.quiet, line)
        _say(json.dumps(result))
        await line.readline()  # stop
        result = {}
    probing.cancel()
    result["lag"] = probe.samples
    _say(json.dumps(result))
    for client in load.clients:
        if client.transport is not None:
            client.transport.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcpx._gwstorm_part")
    parser.add_argument("--role", choices=("pairs", "storm"), required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--presence", choices=("batched", "each"), required=True)
    parser.add_argument("--first", type=int, required=True, help="the first participant's number")
    parser.add_argument("--count", type=int, required=True, help="participants of this process")
    parser.add_argument("--spread", type=float, default=5.0)
    parser.add_argument("--quiet", type=float, default=0.0)
    asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
