"""Run labelled requests against an OpenAI-compatible endpoint and score the tool calls.

For each configuration and catalogue size, each request is one conversation run by
`mcpx_router.loop.run_chat` (or `run_responses`) against MCP servers served in-process with the
`mcp` SDK (`catalogue.served`: exactly the listed tools, every call answered with a success). The
client is wrapped so that each request to the model is timed and its token usage read; the
conversation the loop returns is what is scored:

- right tool: the first call that is not a tool search names the intended tool (its copy on a
  replica peer, or a group holding it, counts too);
- valid arguments: that call is right, its arguments are a JSON object that passes the tool's input
  schema, and they hold the labelled values (`requests.json`);
- answered: the conversation ended with a non-empty answer without tool calls, within the turn
  limit;
- turns: requests sent to the model; prompt tokens: their sum, from the endpoint's `usage` (where
  an endpoint gives none, the harness estimates 1 token per 4 characters of the JSON sent and says
  so); seconds per turn: the wall time of the conversation over its turns (the in-process tool
  calls included, which take milliseconds).
"""

from __future__ import annotations

import copy
import datetime
import json
import re
import time
from collections.abc import Collection, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import jsonschema  # type: ignore[import-untyped, unused-ignore]
import mcp
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter, ToolSearch
from mcpx_router.loop import LoopResult, run_chat, run_responses

from .catalogue import Catalogue, large_catalogue, origin, real_tools, served, small_catalogue

REQUESTS = Path(__file__).resolve().parent / "requests.json"
CONFIGS = ("budget", "groups", "search", "search-responses")
"""budget: every tool, at most `max_tools` per request chosen by BM25 (Chat Completions);
groups: the same with `auto_groups=True, hide_members=True`; search: `ToolSearch` on Chat
Completions (`find_tools`); search-responses: `ToolSearch` on the Responses API."""
SYSTEM = (
    "You are an assistant with tools. When a tool can do what the user asks, call it with the "
    "arguments the request gives; when you have its result, answer in one short sentence."
)


@dataclass(frozen=True)
class Request:
    id: str
    text: str
    tool: str
    """The intended public tool, `peer__tool`."""
    args: dict[str, Any]
    """Checks on the arguments (see requests.json)."""


def load_requests(path: Path = REQUESTS) -> list[Request]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Request(r["id"], r["text"], r["tool"], r["args"]) for r in data["requests"]]


# -- scoring ------------------------------------------------------------------------------------


def _norm(value: Any) -> Any:
    return value.strip().casefold() if isinstance(value, str) else value


def _text(value: Any) -> str:
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).casefold()


def value_matches(check: Any, value: Any) -> bool:
    """Whether an argument's value passes one check of requests.json."""
    if isinstance(check, dict) and "any" in check:
        return any(value_matches(option, value) for option in check["any"])
    if isinstance(check, dict) and "has" in check:
        return str(check["has"]).casefold() in _text(value)
    if isinstance(check, dict) and "has_all" in check:
        return all(str(part).casefold() in _text(value) for part in check["has_all"])
    if isinstance(check, int | float) and not isinstance(check, bool):
        return isinstance(value, int | float) and not isinstance(value, bool) and value == check
    return bool(_norm(check) == _norm(value))


def argument_problem(schema: dict[str, Any], checks: dict[str, Any], arguments: Any) -> str | None:
    """Why `arguments` (as the model sent them: a JSON string or an object) are not valid, or None."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"not JSON: {exc}"
    if not isinstance(arguments, dict):
        return f"not a JSON object: {type(arguments).__name__}"
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(validator(schema).iter_errors(arguments))
    if error is not None:
        return f"schema: {error.message}"
    for key, check in checks.items():
        if key not in arguments:
            return f"{key} missing"
        if not value_matches(check, arguments[key]):
            return f"{key}={arguments[key]!r} does not match {check!r}"
    return None


@dataclass
class Call:
    name: str
    arguments: Any


def model_calls(messages: Sequence[Any]) -> list[Call]:
    """The function calls the model made, in order, from a Chat or Responses conversation."""
    calls: list[Call] = []
    for item in messages:
        if not isinstance(item, dict):
            continue
        if item.get("role") == "assistant":
            for tool_call in item.get("tool_calls") or []:
                if tool_call.get("type") == "function":
                    fn = tool_call["function"]
                    calls.append(Call(fn["name"], fn.get("arguments")))
        elif item.get("type") == "function_call":
            calls.append(Call(item["name"], item.get("arguments")))
        elif item.get("type") == "tool_search_call":
            calls.append(Call("tool_search", item.get("arguments")))
    return calls


@dataclass
class Scored:
    first_call: str | None
    right: bool
    valid: bool
    problem: str | None


def _serves(adapter: OpenAIPeerToolAdapter, request: Request, name: str) -> bool:
    """Whether the public name `name` (a tool or a group) serves the request's intended tool."""
    peer, tool = request.tool.split("__", 1)
    members = {info.name: info.members for info in adapter.groups()}
    if name in members:
        keys = list(members[name])
    else:
        try:
            keys = [adapter.resolve(name)]
        except Exception:
            return False
    return any(origin(key.peer) == peer and key.tool == tool for key in keys)


def score(
    adapter: OpenAIPeerToolAdapter, request: Request, calls: Sequence[Call], search_names: set[str]
) -> Scored:
    """Score the first call that is not a search against the request's intended tool."""
    real = [call for call in calls if call.name not in search_names]
    if not real:
        return Scored(None, False, False, "no tool call")
    first = real[0]
    peer, tool = request.tool.split("__", 1)
    members = {info.name: info.members for info in adapter.groups()}
    arguments = first.arguments
    if first.name in members:
        keys = list(members[first.name])
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass
        if isinstance(arguments, dict):  # the group's own `peer` parameter is not the tool's
            arguments = {k: v for k, v in arguments.items() if k != "peer"}
    else:
        try:
            keys = [adapter.resolve(first.name)]
        except Exception:
            return Scored(first.name, False, False, f"no such tool: {first.name}")
    if not any(origin(key.peer) == peer and key.tool == tool for key in keys):
        return Scored(first.name, False, False, f"wrong tool: {first.name}")
    schema = _schemas()[request.tool]
    problem = argument_problem(schema, request.args, arguments)
    return Scored(first.name, True, problem is None, problem)


_SCHEMAS: dict[str, dict[str, Any]] = {}


def _schemas() -> dict[str, dict[str, Any]]:
    if not _SCHEMAS:
        for peer, tools in real_tools().items():
            for tool in tools:
                _SCHEMAS[f"{peer}__{tool.name}"] = dict(tool.input_schema)
    return _SCHEMAS


# -- metering -----------------------------------------------------------------------------------


@dataclass
class Turn:
    seconds: float
    prompt_tokens: int
    counted: bool
    """True: the endpoint's `usage`; False: estimated by the harness (JSON characters / 4)."""
    tools_sent: int
    names: list[str] = field(default_factory=list)
    """The functions sent (Chat `function.name`, Responses `name`; a `tool_search` tool as such)."""


class _Namespace:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


WITHOUT = ("via", "defaults", "peer-enum")
"""What `Settings.without` may take out of the tools the model is sent, for A/B runs of what the
library writes: `via`, the " (via peer)" suffix of each description; `defaults`, the
"Default: X." notes written into parameter descriptions; `peer-enum`, the `enum` of a group
function's peer parameter (the parameter itself stays)."""

_VIA = re.compile(r" \(via [^()]*\)$")
_DEFAULT = re.compile(r"(?:^|\s)Default: .*\.$", re.S)
_PEER_CHOICE = "The peer to prefer for this call"


def _strip_defaults(node: Any) -> None:
    if isinstance(node, dict):
        text = node.get("description")
        if isinstance(text, str) and _DEFAULT.search(text):
            rest = _DEFAULT.sub("", text).rstrip()
            if rest:
                node["description"] = rest
            else:
                del node["description"]
        for value in node.values():
            _strip_defaults(value)
    elif isinstance(node, list):
        for value in node:
            _strip_defaults(value)


def strip_tools(tools: Sequence[Any], without: Sequence[str]) -> list[Any]:
    """A copy of `tools` (Chat or Responses form) with what `without` names taken out."""
    out = copy.deepcopy(list(tools))
    for tool in out:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else tool
        if "via" in without and isinstance(fn.get("description"), str):
            fn["description"] = _VIA.sub("", fn["description"])
        parameters = fn.get("parameters")
        if "defaults" in without:
            _strip_defaults(parameters)
        if "peer-enum" in without and isinstance(parameters, dict):
            for prop in (parameters.get("properties") or {}).values():
                if isinstance(prop, dict) and str(prop.get("description", "")).startswith(_PEER_CHOICE):
                    prop.pop("enum", None)
    return out


class Metered:
    """An `AsyncOpenAI` stand-in for the loop: times each request and reads its token usage."""

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        max_tokens: int,
        temperature: float | None,
        without: Sequence[str] = (),
    ) -> None:
        self._client = client
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._without = tuple(without)
        self.turns: list[Turn] = []
        self.chat = _Namespace(completions=_Namespace(create=self._chat))
        self.responses = _Namespace(create=self._responses)

    def _extra(self) -> dict[str, Any]:
        return {} if self._temperature is None else {"temperature": self._temperature}

    async def _chat(self, **params: Any) -> Any:
        params = {"max_tokens": self._max_tokens, **self._extra(), **params}
        if self._without and params.get("tools"):
            params["tools"] = strip_tools(params["tools"], self._without)
        started = time.perf_counter()
        reply = await self._client.chat.completions.create(**params)
        usage = getattr(reply, "usage", None)
        tokens = getattr(usage, "prompt_tokens", None)
        self._record(started, params, "messages", tokens)
        return reply

    async def _responses(self, **params: Any) -> Any:
        params = {"max_output_tokens": self._max_tokens, **self._extra(), **params}
        if self._without and params.get("tools"):
            params["tools"] = strip_tools(params["tools"], self._without)
        started = time.perf_counter()
        reply = await self._client.responses.create(**params)
        usage = getattr(reply, "usage", None)
        tokens = getattr(usage, "input_tokens", None)
        self._record(started, params, "input", tokens)
        return reply

    def _record(self, started: float, params: dict[str, Any], key: str, tokens: int | None) -> None:
        seconds = time.perf_counter() - started
        tools = params.get("tools") or []
        names = [str((t.get("function") or t).get("name") or t.get("type")) for t in tools]
        if isinstance(tokens, int) and tokens > 0:
            self.turns.append(Turn(seconds, tokens, True, len(tools), names))
        else:
            sent = json.dumps({"x": params.get(key), "tools": tools}, default=str)
            self.turns.append(Turn(seconds, len(sent) // 4, False, len(tools), names))


# -- running ------------------------------------------------------------------------------------


@dataclass
class Settings:
    model: str
    sizes: tuple[int, ...] = (10, 100, 1000, 5000)
    configs: tuple[str, ...] = CONFIGS
    max_tools: int = 128
    max_turns: int = 4
    max_tokens: int = 256
    temperature: float | None = 0.0
    per_search: int = 5
    native_search: bool = False
    text_calls: bool = False
    limit: dict[tuple[str, int], int | None] = field(default_factory=dict)
    """At most this many requests for a (config, size); absent: all (or `default_limit`)."""
    default_limit: int | None = None
    seed: int = 7
    requests: tuple[str, ...] = ()
    """Only these request ids (in the set's order); empty: all (then `limit` applies)."""
    without: tuple[str, ...] = ()
    """Of `WITHOUT`: what to take out of the tools the model is sent (A/B runs)."""


@dataclass
class Outcome:
    config: str
    size: int
    request: str
    intended: str
    calls: list[dict[str, Any]]
    first_call: str | None
    right: bool
    valid: bool
    problem: str | None
    answered: bool
    turns: int
    prompt_tokens: int
    tokens_counted: bool
    seconds: float
    tools_sent: list[int]
    error: str | None = None
    offered: bool | None = None
    """Whether the intended tool (a copy, or a group holding it) was among the first request's tools."""
    answer: str | None = None
    """The model's final answer (its first 300 characters)."""


def _adapter(config: str, settings: Settings) -> OpenAIPeerToolAdapter:
    if config == "groups":
        return OpenAIPeerToolAdapter(max_tools=settings.max_tools, auto_groups=True, hide_members=True)
    return OpenAIPeerToolAdapter(max_tools=settings.max_tools)


async def _open(adapter: OpenAIPeerToolAdapter, catalogue: Catalogue, stack: AsyncExitStack) -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for peer, tools in catalogue.items():
        client = await stack.enter_async_context(mcp.Client(served(peer, tools, calls)))
        await adapter.add_peer(peer, client)


async def run_one(
    client: AsyncOpenAI,
    adapter: OpenAIPeerToolAdapter,
    config: str,
    size: int,
    request: Request,
    settings: Settings,
) -> Outcome:
    metered = Metered(
        client, max_tokens=settings.max_tokens, temperature=settings.temperature, without=settings.without
    )
    api = cast("AsyncOpenAI", metered)
    search: ToolSearch | bool = False
    search_names: set[str] = {"tool_search"}
    if config.startswith("search"):
        native = config == "search-responses" and settings.native_search
        search = ToolSearch(adapter, per_search=settings.per_search, native=native)
        search_names.add(search.name)
    extra: dict[str, Any] = {"text_calls": True} if settings.text_calls else {}
    started = time.perf_counter()
    error = None
    result: LoopResult | None = None
    try:
        opening: list[Any] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": request.text},
        ]
        if config == "search-responses":
            result = await run_responses(
                api,
                adapter,
                model=settings.model,
                input=opening,
                max_turns=settings.max_turns,
                tool_search=search,
                **extra,
            )
        else:
            result = await run_chat(
                api,
                adapter,
                model=settings.model,
                messages=opening,
                max_turns=settings.max_turns,
                tool_search=search,
                **extra,
            )
    except Exception as exc:  # an endpoint's failure is recorded, and the run goes on
        error = f"{type(exc).__name__}: {exc}"[:500]
    seconds = time.perf_counter() - started
    calls = model_calls(result.messages) if result is not None else []
    scored = score(adapter, request, calls, search_names)
    turns = metered.turns
    return Outcome(
        config=config,
        size=size,
        request=request.id,
        intended=request.tool,
        calls=[asdict(call) for call in calls],
        first_call=scored.first_call,
        right=scored.right,
        valid=scored.valid,
        problem=scored.problem,
        answered=result is not None and result.stopped == "answer" and bool((result.text or "").strip()),
        turns=len(turns),
        prompt_tokens=sum(t.prompt_tokens for t in turns),
        tokens_counted=all(t.counted for t in turns),
        seconds=seconds,
        tools_sent=[t.tools_sent for t in turns],
        error=error,
        offered=any(_serves(adapter, request, name) for name in turns[0].names) if turns else None,
        answer=None if result is None or result.text is None else result.text[:300],
    )


@dataclass
class Resumed:
    """What a run cut short left in its `--out` file, to go on with (`--resume`)."""

    outcomes: list[dict[str, Any]]
    started: datetime.datetime
    """When the run began."""
    commit: str
    """The commits of the code that ran each part."""


def resume(path: Path, settings: dict[str, Any], commit: str, what: str) -> Resumed | None:
    """The outcomes `path` holds, when it was written with these `settings`; None, said why,
    when it was written with others (its outcomes would not be comparable)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    before = json.loads(json.dumps(document.get("settings") or {}))
    now = json.loads(json.dumps(settings))
    # A setting added after the file was written matches when it is off.
    before |= {k: v for k, v in now.items() if k not in before and v in (False, None, [], ())}
    if before != now:
        changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
        print(f"--resume: {path} was written with other settings ({', '.join(changed)}); not resumed")
        return None
    outcomes = document["outcomes"]
    print(f"--resume: {len(outcomes)} {what} already run in {path}, not run again", flush=True)
    commits = document["commit"].split(" then ")
    if commits[-1] != commit:
        commits.append(commit)
    return Resumed(outcomes, datetime.datetime.fromisoformat(document["date"]), " then ".join(commits))


def chosen(requests: Sequence[Request], count: int | None) -> list[Request]:
    """`count` requests spread over the whole set (every k-th), so that each server is represented;
    every request for None or 0."""
    if not count or count >= len(requests):
        return list(requests)
    step = len(requests) / count
    return [requests[int(i * step)] for i in range(count)]


async def run(
    client: AsyncOpenAI,
    settings: Settings,
    requests: Sequence[Request] | None = None,
    progress: Any = None,
    done: Collection[tuple[str, int, str]] = (),
) -> list[Outcome]:
    """Every (config, size) of `settings` over the requests; the outcomes in run order. The
    (config, size, request id) in `done` are not run again (`--resume`)."""
    requests = load_requests() if requests is None else list(requests)
    if settings.requests:
        unknown = set(settings.requests) - {r.id for r in requests}
        if unknown:
            raise ValueError(f"unknown request id(s): {sorted(unknown)}")
        requests = [r for r in requests if r.id in settings.requests]
    outcomes: list[Outcome] = []
    for size in settings.sizes:
        for config in settings.configs:
            subset = chosen(requests, settings.limit.get((config, size), settings.default_limit))
            subset = [r for r in subset if (config, size, r.id) not in done]
            if not subset:
                continue
            if size < 63:  # per request: the intended tool among its siblings and other real tools
                for request in subset:
                    async with AsyncExitStack() as stack:
                        adapter = await stack.enter_async_context(_adapter(config, settings))
                        await _open(adapter, small_catalogue(request.tool, request.id, size), stack)
                        outcome = await run_one(client, adapter, config, size, request, settings)
                    outcomes.append(outcome)
                    if progress:
                        progress(outcome)
                continue
            async with AsyncExitStack() as stack:
                adapter = await stack.enter_async_context(_adapter(config, settings))
                await _open(adapter, large_catalogue(size, seed=settings.seed), stack)
                for request in subset:
                    outcome = await run_one(client, adapter, config, size, request, settings)
                    outcomes.append(outcome)
                    if progress:
                        progress(outcome)
    return outcomes


# -- summary ------------------------------------------------------------------------------------


@dataclass
class Row:
    config: str
    size: int
    requests: int
    right: float
    valid: float
    answered: float
    turns: float
    prompt_tokens: float
    seconds_per_turn: float
    tokens_counted: bool
    errors: int
    offered: float | None = None
    """% of requests whose intended tool was in the first request (None: not recorded)."""


def summarise(outcomes: Sequence[Outcome]) -> list[Row]:
    rows: list[Row] = []
    keys = list(dict.fromkeys((o.config, o.size) for o in outcomes))
    for config, size in keys:
        group = [o for o in outcomes if (o.config, o.size) == (config, size)]
        n = len(group)
        turns = sum(o.turns for o in group)
        rows.append(
            Row(
                config=config,
                size=size,
                requests=n,
                right=100 * sum(o.right for o in group) / n,
                valid=100 * sum(o.valid for o in group) / n,
                answered=100 * sum(o.answered for o in group) / n,
                turns=turns / n,
                prompt_tokens=sum(o.prompt_tokens for o in group) / n,
                seconds_per_turn=sum(o.seconds for o in group) / turns if turns else 0.0,
                tokens_counted=all(o.tokens_counted for o in group),
                errors=sum(o.error is not None for o in group),
                offered=(
                    100 * sum(bool(o.offered) for o in group) / n
                    if all(o.offered is not None for o in group)
                    else None
                ),
            )
        )
    return rows


def table(rows: Sequence[Row]) -> str:
    head = (
        "| config | tools | requests | offered % | right tool % | valid args % | answered % | turns "
        "| prompt tokens | s / turn |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    lines = [head]
    for r in rows:
        tokens = f"{r.prompt_tokens:,.0f}" + ("" if r.tokens_counted else " (est.)")
        errors = f" ({r.errors} failed)" if r.errors else ""
        offered = "—" if r.offered is None else f"{r.offered:.0f}"
        lines.append(
            f"| {r.config} | {r.size:,} | {r.requests}{errors} | {offered} | {r.right:.0f} | {r.valid:.0f} "
            f"| {r.answered:.0f} | {r.turns:.2f} | {tokens} | {r.seconds_per_turn:.2f} |"
        )
    return "\n".join(lines)
