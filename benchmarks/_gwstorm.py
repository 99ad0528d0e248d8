"""A topic filled from empty all at once, as after a gateway restart, with calls running through it.

    python -m benchmarks._gwstorm --participants N [--presence batched] [--spread S] [--pairs P]
        [--quiet SHARE]

Starts our gateway (`_gwserver`, its own process; rate limit lifted, presence batches every
0.25 s, the default) and drives it from this process with `_gwload`'s participants:

1. `2 * pairs` participants join (one wave) and each requester keeps one `tools/call`-sized
   request in flight to its responder, which answers at once;
2. the storm: the other participants connect at random moments within `spread` seconds (the
   jittered reconnects of clients that lost their gateway), all at once in flight; with
   `--quiet SHARE`, that share of them asks for no presence (`presence=none`, as workers that
   only answer do), and its joining is its welcome alone;
3. the fill is over when every participant has every frame of its joining: with presence per
   participant, its welcome and one `join` per later participant; with `--presence batched`,
   its welcome and the batch after the newest welcome's roster.

Prints one JSON object: the fill's seconds (from the storm's first connection), the round trips'
latencies during it, the frames and bytes the participants received, the server's CPU seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from ._gwload import _RESPONSE, Client, Load, cpu_seconds

ROOT = Path(__file__).resolve().parent.parent


class StormLoad(Load):
    slow: list[tuple[float, float, str]]
    """Calls slower than a second: when sent (seconds into the storm), how long, by whom."""
    t0 = 0.0

    def on_text(self, client: Client, head: bytearray, now: float) -> None:
        if bytes(head[:8]) == _RESPONSE:
            sent = self.sent_at.get(int(head[8:16]))
            if sent is not None and now - sent > 1.0:
                self.slow.append((round(sent - self.t0, 3), round(now - sent, 3), client.pid))
        super().on_text(client, head, now)

    async def storm(self, count: int, spread: float, pairs: int, quiet: float = 0.0) -> dict[str, object]:
        await self.warm_up()
        pids = [f"p{i}" for i in range(count)]
        self.clients = await self.connect(pids[: 2 * pairs], self.presence)
        await self.until(partial(self.filled, self.gateway_frames, len(self.clients)), 60)
        requesters, responders = self.clients[:pairs], self.clients[pairs:]
        for requester, responder in zip(requesters, responders, strict=True):
            requester.peer, responder.peer = responder.pid, requester.pid
        self.sending = True
        for requester in requesters:
            self.request(requester, requester.peer)
        base = (
            self.gateway_frames
            - len(self.clients)
            - (len(self.clients) * (len(self.clients) - 1) // 2 if self.presence != "batched" else 0)
        )
        loop = asyncio.get_running_loop()
        cpu0, started = cpu_seconds(self.server_pid), time.perf_counter()
        self.t0, self.slow = started, []
        del self.round_trips[:]

        retries = 0

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

        await asyncio.gather(*(one(pid) for pid in pids[2 * pairs :]))
        connected = time.perf_counter() - started
        await self.until(partial(self.filled, base, count), 600)
        seconds = time.perf_counter() - started
        cpu1 = cpu_seconds(self.server_pid)
        self.sending = False
        latencies = sorted(self.round_trips)
        await self.until(lambda: not self.sent_at, 60)
        for client in self.clients:
            assert client.transport is not None
            client.transport.close()
        return {
            "participants": count,
            "presence": self.presence or "each",
            "quiet": sum(c.quiet for c in self.clients),
            "spread": spread,
            "connected_seconds": connected,
            "fill_seconds": seconds,
            "server_cpu": None if cpu0 is None or cpu1 is None else cpu1 - cpu0,
            "frames": self.frames,
            "round_trips": len(latencies),
            "p50": latencies[len(latencies) // 2] if latencies else None,
            "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else None,
            "max": latencies[-1] if latencies else None,
            "retries": retries,
            "slow": self.slow,
            "closed": self.closed,
        }


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks._gwserver",
        "--kind",
        "gateway",
        "--participants",
        str(args.participants),
        *(["--profile", args.profile] if args.profile else []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None and server.stdin is not None
        url = (await server.stdout.readline()).decode().strip()
        load = StormLoad(url, "gateway", server.pid, args.presence)
        return await load.storm(args.participants, args.spread, args.pairs, args.quiet)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        try:
            await asyncio.wait_for(server.wait(), 30)
        except TimeoutError:
            server.kill()
            await server.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._gwstorm")
    parser.add_argument("--participants", type=int, required=True)
    parser.add_argument("--presence", choices=("batched",))
    parser.add_argument("--spread", type=float, default=5.0, help="seconds the reconnects are spread over")
    parser.add_argument("--pairs", type=int, default=10, help="requester/responder pairs calling meanwhile")
    parser.add_argument(
        "--quiet",
        type=float,
        default=0.0,
        help="share of the storm's participants that ask for no presence (presence=none: workers)",
    )
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile; its stats to FILE")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(main_async(args))), flush=True)


if __name__ == "__main__":
    main()
