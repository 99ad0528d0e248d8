"""Small in-process MCP peers, for the demo and for your own tests.

Each function returns a fresh `MCPServer`; connect to one with `mcp.Client(server)`, or run one
as a stdio server with `python -m mcpx_router.testing docs`.
`search_agent()` and `docs_library()` both offer a tool named `search`, so a catalogue holding
both shows how peer prefixes keep them apart.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

__all__ = ["HashingEmbedder", "demo_peers", "docs_library", "main", "search_agent", "weather_station"]

_CITIES = {
    "paris": (14, "light rain"),
    "lisbon": (21, "sunny"),
    "oslo": (3, "snow"),
    "tokyo": (17, "cloudy"),
}


class Units(BaseModel):
    temperature: Literal["celsius", "fahrenheit"] = "celsius"
    wind: Literal["kmh", "mph"] = "kmh"


class HashingEmbedder:
    """A deterministic local embedder, for tests and offline use: character n-grams of each
    word (and the words themselves), hashed into `dimensions` buckets and counted.

    Texts that share words or word parts get close vectors; nothing is downloaded or learned.
    """

    def __init__(self, dimensions: int = 512, n: int = 3) -> None:
        self.dimensions = dimensions
        self.n = n
        self.calls: list[list[str]] = []
        """The texts of each call, in order (to see what was embedded, and in which batches)."""

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self.vector(text) for text in texts]

    def vector(self, text: str) -> list[float]:
        out = [0.0] * self.dimensions
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            padded = f"<{word}>"
            grams = [padded[i : i + self.n] for i in range(max(1, len(padded) - self.n + 1))]
            for gram in [*grams, padded]:
                digest = hashlib.blake2b(gram.encode(), digest_size=4).digest()
                out[int.from_bytes(digest, "big") % self.dimensions] += 1.0
        return out


def weather_station() -> MCPServer:
    """A peer with a forecast tool (defaults, an enum, a nested object) and an alerts tool."""
    server = MCPServer("weather", instructions="Weather forecasts for a few cities.")

    @server.tool()
    async def forecast(
        city: Annotated[str, Field(description="City name, e.g. Paris")],
        days: Annotated[int, Field(ge=1, le=7, description="How many days ahead")] = 3,
        units: Units | None = None,
    ) -> str:
        """Forecast the weather for a city."""
        await anyio.sleep(0.05)  # a real station takes a moment to answer
        temp, sky = _CITIES.get(city.strip().lower(), (12, "overcast"))
        if (units or Units()).temperature == "fahrenheit":
            return f"{city}: {sky}, {temp * 9 // 5 + 32}°F, for the next {days} day(s)"
        return f"{city}: {sky}, {temp}°C, for the next {days} day(s)"

    @server.tool()
    def alerts(region: Annotated[str, Field(description="Region or country")]) -> dict[str, object]:
        """Active weather alerts for a region."""
        active = ["storm warning: coast"] if region.strip().lower() in {"portugal", "norway"} else []
        return {"region": region, "alerts": active}

    return server


def search_agent() -> MCPServer:
    """A peer that searches the web (a fixed, offline index)."""
    server = MCPServer("search-agent")
    index = {
        "mcp": "Model Context Protocol: an open protocol that connects models to tools and data.",
        "openai": "OpenAI function calling lets a model ask the host to run a named function.",
        "anyio": "AnyIO: structured concurrency on top of asyncio or Trio.",
    }

    @server.tool()
    async def search(
        query: Annotated[str, Field(description="What to look for")],
        limit: Annotated[int, Field(ge=1, le=10)] = 3,
    ) -> str:
        """Search the web."""
        await anyio.sleep(0.05)
        words = query.lower().split()
        hits = [text for key, text in index.items() if any(key in w for w in words)]
        return "\n".join(hits[:limit]) or f"No web results for {query!r}."

    return server


def docs_library() -> MCPServer:
    """A peer that searches project documentation; it also names its tool `search`."""
    server = MCPServer("docs")
    pages = {
        "install": "docs/install.md: run `python3 dev.py demo` on a fresh checkout.",
        "names": "docs/architecture.md: tools are published as peer__tool.",
    }

    @server.tool()
    async def search(query: Annotated[str, Field(description="Words to find in the docs")]) -> str:
        """Search the documentation."""
        await anyio.sleep(0.05)
        hits = [text for key, text in pages.items() if key in query.lower()]
        return "\n".join(hits) or f"No page mentions {query!r}."

    @server.tool(name="page.get")
    def get_page(path: str) -> str:
        """Read one documentation page by path."""
        return f"{path}: (page body)"

    return server


def demo_peers() -> dict[str, MCPServer]:
    """The demo's peers, by peer id."""
    return {"weather": weather_station(), "search-agent": search_agent(), "docs": docs_library()}


def main(argv: list[str] | None = None) -> int:
    """`python -m mcpx_router.testing NAME`: serve one of the demo peers over stdio."""
    import sys

    peers = demo_peers()
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in peers:
        print(f"usage: python -m mcpx_router.testing {{{','.join(peers)}}}", file=sys.stderr)
        return 2
    peers[args[0]].run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
