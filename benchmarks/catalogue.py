"""Catalogue: 500 peers x 20 tools registered and published, its memory, and the cached view.

Every peer is its own in-process `MCPServer` with its own connected `mcp.Client`. The 20 tool
definitions (2-3 properties each, one with a `default`, one an `enum`; pydantic-generated
schemas, as a Python MCP server sends them) are built once and shared by the servers; what a
client lists is freshly built and parsed per listing, so nothing is shared with the servers.

1. Time to register and publish: a fresh adapter, `add_peer` for each of the 500 clients, then
   `get_openai_tools(max_tools=None)` (the whole catalogue: by default a request carries at most
   128 tools, the plain loop produces all 10,000); vs a plain loop making the same `list_tools`
   calls (same cursor handling, same `cache_mode="use"` the adapter uses) and converting each
   tool to the Chat Completions format with a straightforward deep-copy-and-strip-defaults
   function. The two alternate, order swapped every round; the ratio is the median of the
   per-round ratios (each round's two runs ran back to back). Target ≤ 1.1x.
   A diagnostic row repeats this with listing taken out (each peer replays a listing made
   beforehand), which isolates the conversion cost; it has no target.
2. Retained memory per tool (tracemalloc), target ≤ 4.5 KiB (4,608 bytes). The servers and
   clients exist before tracing starts, so they are not counted. Listing is not free of side
   effects, though: each client session keeps derived state per listed tool (for instance the
   tool's output schema), replaced on every listing. So tracing starts, one listing-only pass
   runs over every client (their per-tool state is now traced), and a second listing-only pass
   measures what listing alone leaves behind (the control, which should be ~0). Then the adapter
   registers all peers and builds its Chat view: what is still allocated after a full
   collection, minus the control, divided by 10,000, is the catalogue's cost per tool. It
   includes everything the adapter keeps: each peer's listed `Tool` (its `source`), the
   converted parameters, the `PublishedTool`, the name table and lookup maps, and the Chat
   view. A listed tool's output schema is shared with the session that listed it and stays
   accounted to the session. The plain loop's retained output list is reported beside it.
3. `get_openai_tools()` on an unchanged catalogue, the median over batches of calls; target
   ≤ 10 µs per call. Three cases: the 10,000-tool catalogue as called by default (more tools
   than the 128 a request may carry), the same with `max_tools=None` (the whole list), and a
   catalogue of 120 tools (within the default). Batches alternate with batches of a reference,
   a method returning a tuple it holds (the floor for any cached view), to show how fast the
   machine was at the time. The package's log records are counted, not printed.
   `relevant_to=` ranking on the 10,000 tools is timed as a diagnostic.
"""

from __future__ import annotations

import logging
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp
import mcp_types as mt
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool

from mcpx_router import OpenAIPeerToolAdapter

from ._common import GcTime, Row, Settings, collect, fmt_bytes, fmt_seconds, gc_time, median, tracked_objects

NAME = "catalogue"

PEERS = 500
TOOLS_PER_PEER = 20
REGISTER_TARGET = 1.1
MEMORY_TARGET = 4.5 * 1024
VIEW_TARGET = 10e-6
PEERS_WITHIN_BUDGET = 6
"""6 x 20 = 120 tools: a catalogue within the default 128-tool request budget."""


# -- the peers' tools ---------------------------------------------------------------------------


def lookup(query: str, region: Literal["eu", "us", "apac"], limit: int = 10) -> str:
    return query


def convert(amount: float, unit: Literal["kg", "lb", "g"], precision: int = 2) -> str:
    return f"{amount:.{precision}f} {unit}"


def status(record_id: str, detail: Literal["brief", "full"] = "brief") -> str:
    return record_id


def notify(recipient: str, channel: Literal["email", "sms", "push"], urgent: bool = False) -> str:
    return recipient


_TOOLS: tuple[tuple[str, Callable[..., str], str], ...] = (
    ("search_orders", lookup, "Search orders by free text."),
    ("search_customers", lookup, "Search customers by name or e-mail."),
    ("search_products", lookup, "Search the product catalogue."),
    ("find_invoices", lookup, "Find invoices matching a query."),
    ("find_shipments", lookup, "Find shipments matching a query."),
    ("convert_weight", convert, "Convert a weight to another unit."),
    ("quote_shipping", convert, "Quote the shipping cost of a parcel."),
    ("estimate_tax", convert, "Estimate the tax due on an amount."),
    ("price_item", convert, "Price an item by weight."),
    ("round_amount", convert, "Round an amount for display."),
    ("order_status", status, "Get the status of an order."),
    ("invoice_status", status, "Get the status of an invoice."),
    ("ticket_status", status, "Get the status of a support ticket."),
    ("shipment_status", status, "Get the status of a shipment."),
    ("refund_status", status, "Get the status of a refund."),
    ("notify_customer", notify, "Send a message to a customer."),
    ("notify_courier", notify, "Send a message to the courier."),
    ("notify_team", notify, "Send a message to the support team."),
    ("alert_oncall", notify, "Page the on-call engineer."),
    ("remind_user", notify, "Send a reminder to a user."),
)
assert len(_TOOLS) == TOOLS_PER_PEER


def tool_definitions() -> list[Tool]:
    return [Tool.from_function(fn, name=name, description=text) for name, fn, text in _TOOLS]


# -- the baseline: list, deep-copy, strip defaults --------------------------------------------


def strip_defaults(value: Any) -> Any:
    """A deep copy of a JSON value with every `default` key left out."""
    if isinstance(value, Mapping):
        return {key: strip_defaults(item) for key, item in value.items() if key != "default"}
    if isinstance(value, list):
        return [strip_defaults(item) for item in value]
    return value


async def list_tools(session: Any) -> list[mt.Tool]:
    """Every page of a peer's tools, with the calls the adapter makes (mcpx_router/_session.py)."""
    tools: list[mt.Tool] = []
    cursor: str | None = None
    while True:
        if isinstance(session, mcp.Client):
            page = await session.list_tools(cursor=cursor, cache_mode="use")
        else:
            page = await session.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


async def plain_catalogue(peers: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    openai_tools: list[dict[str, Any]] = []
    for peer_id, session in peers:
        for tool in await list_tools(session):
            openai_tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": f"{peer_id}__{tool.name}",
                        "description": tool.description or "",
                        "parameters": strip_defaults(tool.input_schema),
                    },
                }
            )
    return openai_tools


async def adapter_catalogue(
    adapter: OpenAIPeerToolAdapter, peers: Sequence[tuple[str, Any]]
) -> tuple[Mapping[str, Any], ...]:
    for peer_id, session in peers:
        await adapter.add_peer(peer_id, session)
    # The whole catalogue, as the plain loop produces it (by default a request carries at most 128).
    return adapter.get_openai_tools(max_tools=None)


class Replay:
    """A peer that answers `tools/list` with a listing made earlier: conversion without listing."""

    def __init__(self, page: mt.ListToolsResult) -> None:
        self._page = page

    async def list_tools(self, cursor: str | None = None) -> mt.ListToolsResult:
        return self._page

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, read_timeout_seconds: float | None = None
    ) -> mt.CallToolResult:
        raise NotImplementedError


# -- measurements -------------------------------------------------------------------------------


@dataclass(slots=True)
class Runs:
    """Run times of one side, with the cyclic-GC time inside each run."""

    seconds: list[float] = field(default_factory=list)
    gc: list[GcTime] = field(default_factory=list)

    @property
    def median(self) -> float:
        return median(self.seconds)

    @property
    def median_gc(self) -> float:
        return median([spent.total for spent in self.gc])

    def ratios(self, baseline: Runs) -> list[float]:
        """This side's time over the baseline's, round by round (the two ran back to back)."""
        return [mine / theirs for mine, theirs in zip(self.seconds, baseline.seconds, strict=True)]


async def compare(
    peers: Sequence[tuple[str, Any]], rounds: int, label: str, count: int = PEERS * TOOLS_PER_PEER
) -> tuple[Runs, Runs]:
    """Alternate plain loop and adapter registration of `count` tools; return both sides' runs."""
    plain, subject = Runs(), Runs()

    async def time_plain(runs: Runs) -> None:
        collect()
        with gc_time() as spent:
            start = time.perf_counter()
            result = await plain_catalogue(peers)
            runs.seconds.append(time.perf_counter() - start)
        runs.gc.append(spent)
        assert len(result) == count

    async def time_adapter(runs: Runs) -> None:
        collect()
        async with OpenAIPeerToolAdapter() as adapter:
            with gc_time() as spent:
                start = time.perf_counter()
                result = await adapter_catalogue(adapter, peers)
                runs.seconds.append(time.perf_counter() - start)
            runs.gc.append(spent)
        assert len(result) == count

    await time_plain(Runs())  # warm-up, not recorded
    await time_adapter(Runs())
    for index in range(rounds):
        if index % 2 == 0:
            await time_plain(plain)
            await time_adapter(subject)
        else:
            await time_adapter(subject)
            await time_plain(plain)
        print(f"  {label} round {index + 1}:")
        print(f"    plain   {fmt_seconds(plain.seconds[-1]):>9s} ({plain.gc[-1]})")
        print(f"    adapter {fmt_seconds(subject.seconds[-1]):>9s} ({subject.gc[-1]})")
    return plain, subject


def traced() -> int:
    collect()
    return tracemalloc.get_traced_memory()[0]


@dataclass(frozen=True, slots=True)
class Memory:
    residue: int
    """Bytes a listing-only pass left allocated (the control)."""
    adapter: int
    """Bytes still allocated after the adapter registered everything, less the control."""
    plain: int
    """Bytes the plain loop's output list holds."""
    adapter_objects: int
    """GC-tracked objects the adapter's registration added."""
    plain_objects: int
    sites: list[str]
    """The largest allocation sites of the adapter's registration."""


async def memory(peers: Sequence[tuple[str, Any]]) -> Memory:
    tracemalloc.start(1)
    try:
        for _, session in peers:  # session-side per-tool state is traced from here on
            await list_tools(session)
        start = traced()
        for _, session in peers:
            await list_tools(session)
        control = traced()
        objects = tracked_objects()
        before = tracemalloc.take_snapshot()  # snapshots themselves are not traced
        async with OpenAIPeerToolAdapter() as adapter:
            await adapter_catalogue(adapter, peers)
            registered = traced()
            after = tracemalloc.take_snapshot()
            with_adapter = tracked_objects()
            plain = await plain_catalogue(peers)
            with_plain = traced()
            with_both = tracked_objects()
            del plain
        sites = [
            f"{stat.traceback[0].filename.rsplit('site-packages/', 1)[-1]}:{stat.traceback[0].lineno} "
            f"{fmt_bytes(stat.size_diff)} in {stat.count_diff:+,} blocks"
            for stat in after.compare_to(before, "lineno")[:8]
        ]
    finally:
        tracemalloc.stop()
    return Memory(
        residue=control - start,
        adapter=registered - control,
        plain=with_plain - registered,
        adapter_objects=with_adapter - objects,
        plain_objects=with_both - with_adapter,
        sites=sites,
    )


class _Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.records += 1


class Stored:
    """The floor for a cached view: a method that returns a tuple it holds."""

    def __init__(self, value: tuple[Any, ...]) -> None:
        self.value = value

    def get(self) -> tuple[Any, ...]:
        return self.value


def per_call(
    fn: Callable[[], tuple[Any, ...]], batches: int, per_batch: int
) -> tuple[list[float], list[float], float, int]:
    """Seconds per call of `fn` per batch; the same for a reference (a `Stored` method returning
    what `fn` returned), their batches alternating; the log records `fn` emitted per call; and
    the length of what it returns.

    The package logger's records are counted instead of printed, so a warning costs its
    LogRecord and handler call but no terminal I/O.
    """
    logger = logging.getLogger("mcpx_router")
    counter = _Counter()
    logger.addHandler(counter)
    propagate, logger.propagate = logger.propagate, False
    times: list[float] = []
    floor: list[float] = []
    try:
        first = fn()
        size, reference = len(first), Stored(first).get
        for _ in range(batches):
            for call, out in ((reference, floor), (fn, times)):
                start = time.perf_counter()
                for _ in range(per_batch):
                    call()
                out.append((time.perf_counter() - start) / per_batch)
    finally:
        logger.removeHandler(counter)
        logger.propagate = propagate
    return times, floor, counter.records / (1 + batches * per_batch), size


async def run(settings: Settings) -> list[Row]:
    rounds = 2 if settings.quick else 5
    started = time.perf_counter()
    definitions = tool_definitions()
    servers = [MCPServer(f"peer{i:03d}", tools=list(definitions)) for i in range(PEERS)]
    count = PEERS * TOOLS_PER_PEER
    rows: list[Row] = []
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(mcp.Client(server)) for server in servers]
        peers = [(f"peer{i:03d}", client) for i, client in enumerate(clients)]
        print(
            f"{PEERS} in-process peers x {TOOLS_PER_PEER} tools connected in "
            f"{fmt_seconds(time.perf_counter() - started)}; the heap holds {tracked_objects():,} "
            "GC-tracked objects (a full collection walks them all)"
        )

        print(f"register all peers + get_openai_tools(max_tools=None), {rounds} alternating rounds:")
        plain, subject = await compare(peers, rounds, "listing + conversion")
        per_round = subject.ratios(plain)
        ratio = median(per_round)
        ok = ratio <= REGISTER_TARGET
        print(
            f"  median: plain {fmt_seconds(plain.median)} (gc {fmt_seconds(plain.median_gc)}), adapter "
            f"{fmt_seconds(subject.median)} (gc {fmt_seconds(subject.median_gc)}); per-round ratios "
            f"{min(per_round):.3f}-{max(per_round):.3f}, median {ratio:.3f}x "
            f"(target ≤ {REGISTER_TARGET}x) {'PASS' if ok else 'FAIL'}"
        )
        rows.append(
            Row(
                NAME,
                f"register {PEERS}x{TOOLS_PER_PEER} tools + get_openai_tools()",
                fmt_seconds(plain.median),
                fmt_seconds(subject.median),
                f"{ratio:.3f}x",
                f"≤ {REGISTER_TARGET}x",
                ok,
            )
        )
        rows.append(
            Row(
                NAME,
                "of which cyclic GC (median; diagnostic)",
                fmt_seconds(plain.median_gc),
                fmt_seconds(subject.median_gc),
                "—",
                "—",
                None,
            )
        )

        replayed = [(peer_id, Replay(await client.list_tools())) for peer_id, client in peers]
        plain, subject = await compare(replayed, rounds, "conversion only")
        del replayed
        ratio = median(subject.ratios(plain))
        print(
            f"  median: plain {fmt_seconds(plain.median)} ({fmt_seconds(plain.median / count)}/tool, gc "
            f"{fmt_seconds(plain.median_gc)}), adapter {fmt_seconds(subject.median)} "
            f"({fmt_seconds(subject.median / count)}/tool, gc {fmt_seconds(subject.median_gc)}) "
            f"-> median per-round ratio {ratio:.2f}x (diagnostic)"
        )
        rows.append(
            Row(
                NAME,
                "the same with listing taken out (conversion only; diagnostic)",
                f"{fmt_seconds(plain.median)} ({fmt_seconds(plain.median / count)}/tool)",
                f"{fmt_seconds(subject.median)} ({fmt_seconds(subject.median / count)}/tool)",
                f"{ratio:.2f}x",
                "—",
                None,
            )
        )
        rows.append(
            Row(
                NAME,
                "of which cyclic GC (median; diagnostic)",
                fmt_seconds(plain.median_gc),
                fmt_seconds(subject.median_gc),
                "—",
                "—",
                None,
            )
        )

        print("retained memory (tracemalloc; see the module docstring for the method):")
        mem = await memory(peers)
        per_tool = mem.adapter / count
        plain_per_tool = mem.plain / count
        ok = per_tool <= MEMORY_TARGET
        print(f"  listing-only control pass left {fmt_bytes(mem.residue)} behind (subtracted)")
        print(
            f"  adapter catalogue: {fmt_bytes(mem.adapter)} = {fmt_bytes(per_tool)} per tool; "
            f"{mem.adapter_objects / count:.1f} GC-tracked objects per tool"
        )
        print(
            f"  plain loop's output list: {fmt_bytes(mem.plain)} = {fmt_bytes(plain_per_tool)} per tool; "
            f"{mem.plain_objects / count:.1f} GC-tracked objects per tool"
        )
        print("  largest allocation sites of the adapter's registration:")
        for site in mem.sites:
            print(f"    {site}")
        print(
            f"  memory per tool {fmt_bytes(per_tool)} (target ≤ {fmt_bytes(MEMORY_TARGET)}) "
            f"{'PASS' if ok else 'FAIL'}"
        )
        rows.append(
            Row(
                NAME,
                "retained memory per tool (baseline: the plain loop's output list)",
                fmt_bytes(plain_per_tool),
                fmt_bytes(per_tool),
                f"{per_tool / plain_per_tool:.2f}x",
                f"≤ {fmt_bytes(MEMORY_TARGET)}",
                ok,
            )
        )
        rows.append(
            Row(
                NAME,
                "GC-tracked objects retained per tool (diagnostic)",
                f"{mem.plain_objects / count:.1f}",
                f"{mem.adapter_objects / count:.1f}",
                f"{mem.adapter_objects / mem.plain_objects:.2f}x",
                "—",
                None,
            )
        )

        batches, per_batch = (11, 5_000) if settings.quick else (31, 20_000)
        print(f"get_openai_tools() on an unchanged catalogue: {batches} batches of {per_batch:,} calls")
        within = PEERS_WITHIN_BUDGET * TOOLS_PER_PEER
        async with OpenAIPeerToolAdapter() as adapter, OpenAIPeerToolAdapter() as small:
            await adapter_catalogue(adapter, peers)
            await adapter_catalogue(small, peers[:PEERS_WITHIN_BUDGET])
            cases: list[tuple[str, Callable[[], tuple[Any, ...]]]] = [
                (
                    f"get_openai_tools(), {count:,} tools (over the 128-tool default)",
                    adapter.get_openai_tools,
                ),
                (
                    f"get_openai_tools(max_tools=None), {count:,} tools",
                    lambda: adapter.get_openai_tools(max_tools=None),
                ),
                (f"get_openai_tools(), {within} tools (within the default)", small.get_openai_tools),
            ]
            for label, fn in cases:
                times, floor, logged, size = per_call(fn, batches, per_batch)
                cost, base = median(times), median(floor)
                ok = cost <= VIEW_TARGET
                note = f"; {logged:.0f} log record(s) per call" if logged else ""
                print(
                    f"  {label}: median {fmt_seconds(cost)} per call (min {fmt_seconds(min(times))}, "
                    f"max {fmt_seconds(max(times))}; returns {size} tools{note}); a method returning a "
                    f"stored tuple: {fmt_seconds(base)} -> {cost / base:.1f}x; "
                    f"target ≤ {fmt_seconds(VIEW_TARGET)} {'PASS' if ok else 'FAIL'}"
                )
                rows.append(
                    Row(
                        NAME,
                        label,
                        fmt_seconds(base),
                        fmt_seconds(cost),
                        f"{cost / base:.1f}x",
                        "≤ 10 µs",
                        ok,
                    )
                )
            query = "quote shipping for a parcel and notify the customer"
            times, _, _, _ = per_call(lambda: adapter.get_openai_tools(relevant_to=query), 3, 1)
            cost = median(times)
            print(
                f"  get_openai_tools(relevant_to=query), {count:,} tools: median {fmt_seconds(cost)} "
                "per call (diagnostic, no target)"
            )
            rows.append(
                Row(
                    NAME,
                    f"get_openai_tools(relevant_to=query), {count:,} tools (diagnostic)",
                    "—",
                    fmt_seconds(cost),
                    "—",
                    "—",
                    None,
                )
            )
    print(f"catalogue benchmark took {fmt_seconds(time.perf_counter() - started)}")
    return rows
