"""Tool search: a catalogue larger than one request may carry, found by the model as it needs it.

When more tools are published than `max_tools`, a `ToolSearch` offers the model a search tool
and the tools most relevant to the conversation. What the model finds is offered from its next
step on, within the budget:

- Chat Completions, legacy functions, and Responses with `native=False`: a `find_tools(query)`
  function; its answer lists the tools found, which join the next request's tool list (the
  most recently found first, then the most relevant others).
- Responses (`native=True`): the API's own client-executed tool search, a `tool_search` tool
  with `execution: "client"`; the model's `tool_search_call` is answered with a
  `tool_search_output` item holding the tools found, which the API loads for the rest of the
  conversation. Tools loaded so count against the budget, so fewer others are listed.

One `ToolSearch` holds one conversation's state (what was found); create one per conversation.
When every tool fits, the tool lists are exactly the adapter's own, with no search tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from .._answering import UNSET, Answerer
from .._catalogue import Format, PublishedTool
from .._dispatch import check_limit
from .._errors import UnknownToolError, UsageError
from .._naming import ToolKey, is_legal_name
from ..model._schema import chat_tool, legacy_function, responses_tool
from ..model._search_hints import (
    SUGGESTED,
    hint,
    hinted,
    meaningful,
    partial_score,
    partial_words,
    query_of,
    tool_words,
)
from ..model.arguments._arguments import ArgumentsError, parse_arguments
from ..model.calls._answers import answer, search_output
from ..model.calls._calls import ToolCall, client_search, parse_tool_call, tool_call_items

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionAssistantMessageParam, ChatCompletionFunctionToolParam
    from openai.types.responses import ResponseInputItemParam, ToolParam
    from openai.types.shared_params import FunctionDefinition

    from ..model.calls._text_calls import Resolve

__all__ = ["SearchedAdapter", "ToolSearch"]


class SearchedAdapter(Protocol):
    """What a tool search asks of the adapter it serves (an `OpenAIPeerToolAdapter`): its tools,
    their ranking and lists, and its dispatch. The adapter sits above `relevance/`: it ranks its
    tools through it, and is asked through this protocol."""

    _answerer: Answerer

    @property
    def tools(self) -> tuple[PublishedTool, ...]: ...
    @property
    def max_tools(self) -> int | None: ...
    @property
    def version(self) -> int: ...
    def resolve(self, name: str) -> ToolKey: ...
    async def rank_tools(
        self, relevant_to: str | Iterable[Any] | None
    ) -> list[tuple[PublishedTool, float]]: ...
    async def dispatch(
        self, tool_calls: Any, *, call_timeout: float | None = ..., text_calls: bool = ...
    ) -> list[Any]: ...
    def get_openai_tools(
        self, *, relevant_to: str | Iterable[Any] | None = ..., max_tools: int | None = ...
    ) -> tuple[Any, ...]: ...
    def get_responses_tools(
        self, *, relevant_to: str | Iterable[Any] | None = ..., max_tools: int | None = ...
    ) -> tuple[Any, ...]: ...
    def get_openai_functions(
        self, *, relevant_to: str | Iterable[Any] | None = ..., max_tools: int | None = ...
    ) -> tuple[Any, ...]: ...
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            # No example: a small model copies an example as its query, whatever it needs.
            "description": "What the user needs done, in the user's own words: the task, not a tool name.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}


class ToolSearch:
    """One conversation's tool search over an adapter's catalogue.

    Example:
        ```python
        search = ToolSearch(adapter)
        while True:
            reply = await client.chat.completions.create(
                model=model, messages=messages, tools=await search.chat_tools(messages))
            message = reply.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                break
            messages += await search.dispatch(message.tool_calls)
        ```

    `run_chat(..., tool_search=True)` and `run_responses(..., tool_search=True)` do this.

    Args:
        adapter: The adapter whose tools are searched and called (a Router's: `router.adapter`).
        per_search: The most tools one search returns.
        offered: The most tools offered besides the search tool and those found (None: as many
            as the budget leaves).
        native: On the Responses API, use its client-executed `tool_search` tool rather than
            the `find_tools` function (endpoints without tool search need False).
        name: The search function's name; if a published tool holds it, the first of
            `name_2`, `name_3`, ... that none holds.
    """

    def __init__(
        self,
        adapter: SearchedAdapter,
        *,
        per_search: int = 8,
        offered: int | None = None,
        native: bool = True,
        name: str = "find_tools",
    ) -> None:
        check_limit("per_search", per_search)
        check_limit("offered", offered, minimum=0)
        if not isinstance(name, str) or not is_legal_name(name) or len(name) > 60:
            raise UsageError(f"name must be a legal function name of at most 60 characters, not {name!r}")
        self._adapter = adapter
        self._per_search = per_search
        self._offered = offered
        self._native = bool(native)
        taken = {tool.name for tool in adapter.tools}
        candidates = (name if n == 1 else f"{name}_{n}" for n in range(1, len(taken) + 2))
        self.name = next(c for c in candidates if c not in taken)
        """The search function's name in this conversation."""
        self._found: dict[str, None] = {}
        self._words_version = -1
        self._words: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        """Per tool, the words of its own name and of its description (for partial matches)."""

    @property
    def found(self) -> tuple[str, ...]:
        """The public names of the tools found so far, most recent last."""
        return tuple(self._found)

    async def chat_tools(self, messages: str | Iterable[Any]) -> list[ChatCompletionFunctionToolParam]:
        """The Chat Completions `tools` for the next request of the conversation `messages`."""
        return cast("list[ChatCompletionFunctionToolParam]", await self._tools("chat", messages))

    async def responses_tools(self, items: str | Iterable[Any]) -> list[ToolParam]:
        """The Responses API `tools` for the next request with input `items` (function tools, and
        the API's `tool_search` tool when `native`)."""
        return cast("list[ToolParam]", await self._tools("responses", items))

    async def functions(self, messages: str | Iterable[Any]) -> list[FunctionDefinition]:
        """The legacy `functions` for the next request of the conversation `messages`."""
        return cast("list[FunctionDefinition]", await self._tools("functions", messages))

    async def find(self, query: str) -> list[PublishedTool]:
        """The tools most relevant to `query` (at most `per_search`), best first; when no word of it
        is a tool's word, those with a word it begins, ends or is part of (`budget`: "budgets",
        `todo`: "todos"); none without either."""
        ranked = await self._adapter.rank_tools(query)
        found = [tool for tool, score in ranked if score > 0 and tool.name != self.name]
        return (found or self._partly(query))[: self._per_search]

    def _partly(self, query: str) -> list[PublishedTool]:
        """The tools with a word that partly matches a word of `query` of three letters or more, or
        its stem (`partial_score`): a word of the tool's own name counts twice."""
        wanted = partial_words(query)
        if not wanted:
            return []
        if self._words_version != self._adapter.version:
            self._words_version, self._words = self._adapter.version, {}
        scored: list[tuple[int, int, PublishedTool]] = []
        for place, tool in enumerate(self._adapter.tools):
            if tool.name == self.name:
                continue
            words = self._words.get(tool.name) or self._words.setdefault(tool.name, tool_words(tool))
            if score := partial_score(words, wanted):
                scored.append((-score, place, tool))
        return [tool for _, _, tool in sorted(scored, key=lambda s: s[:2])]

    def recover_text_calls(
        self, message: Any, *, unknown: bool = False, truncated: bool = False
    ) -> ChatCompletionAssistantMessageParam | None:
        """As the adapter's `recover_text_calls`, the search function's name known too: a model
        that writes its calls as text can search."""
        from ..model.calls._written_calls import chat_with_text_calls

        recovered = chat_with_text_calls(message, self._written_names(unknown), truncated=truncated)
        return cast("ChatCompletionAssistantMessageParam | None", recovered)

    def recover_text_call_items(
        self, response: Any, *, unknown: bool = False, truncated: bool = False
    ) -> list[ResponseInputItemParam] | None:
        """As the adapter's `recover_text_call_items`, the search function's name known too."""
        from ..model.calls._written_calls import responses_with_text_calls

        items = responses_with_text_calls(response, self._written_names(unknown), truncated=truncated)
        return cast("list[ResponseInputItemParam] | None", items)

    def _written_names(self, unknown: bool) -> Resolve:
        published = self._adapter._answerer.written_names(unknown=unknown)
        return lambda name: name if name == self.name else published(name)

    async def dispatch(self, tool_calls: Any, *, call_timeout: float | None = UNSET) -> list[Any]:
        """Answer every call as `adapter.dispatch` does, and the searches itself: one answer per
        call in call order (then any media message), a `tool_search_output` for a native search."""
        items, whole = tool_call_items(tool_calls)
        slots: list[Any] = []  # per answer: ("search", call), ("native", item), or None (the adapter's)
        others: list[Any] = []
        unknown: dict[int, str] = {}  # position in `others` -> a name no tool answers to
        for index, item in enumerate(items):
            if client_search(item) is not None:
                slots.append(("native", item))
                continue
            call = parse_tool_call(item, lenient=whole, index=None if item is tool_calls else index)
            if call is None:
                continue
            if call.name == self.name and call.problem is None:
                slots.append(("search", call))
            else:
                if call.problem is None and not self._known(call.name):
                    unknown[len(others)] = call.name
                slots.append(None)
                others.append(item)
        theirs = await self._adapter.dispatch(others, call_timeout=call_timeout) if others else []
        for position, name in unknown.items():  # what the search finds for the name, as a hint
            theirs[position] = await self._hinted(theirs[position], name)
        out: list[Any] = []
        position = 0
        for slot in slots:
            if slot is None:
                out.append(theirs[position])
                position += 1
            elif slot[0] == "search":
                out.append(answer(slot[1], await self._answer_function(slot[1])))
            else:
                out.append(await self._answer_native(slot[1]))
        out.extend(theirs[position:])  # a media message follows the answers
        return out

    def _known(self, name: str) -> bool:
        try:
            self._adapter.resolve(name)  # a look-up; a member a group hides is found too
        except UnknownToolError:
            return any(tool.name == name for tool in self._adapter.tools)  # a group's function
        return True

    async def _hinted(self, answer: Any, name: str) -> Any:
        native = self._native and isinstance(answer, Mapping) and answer.get("type") == "function_call_output"
        found = meaningful(name, await self.find(query_of(name)))[:SUGGESTED]
        if not native:
            self._note(found)  # offered from the next step on, as a search's finds are
        text = hint([t.name for t in found], None if native else self.name, offered=not native)
        return hinted(answer, text)

    async def _answer_function(self, call: ToolCall) -> str:
        try:
            arguments = parse_arguments(call.arguments)
        except ArgumentsError as exc:
            return f"Error: {self.name} was not called. {exc}"
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return (
                f'Error: {self.name} needs a "query": a string saying what the tool should do, '
                "in a few words."
            )
        tools = await self.find(query)
        if not tools:
            return f"No tool matches {query!r}. Try other words, or go on without a tool."
        self._note(tools)
        lines = [f"Found {len(tools)} tools for {query!r}; call them from your next step on:"]
        lines += [f"- {tool.name}: {_first_line(tool.description)}" for tool in tools]
        return "\n".join(lines)

    async def _answer_native(self, item: Any) -> dict[str, Any]:
        call_id, arguments = client_search(item) or (None, None)
        try:
            query = parse_arguments(arguments).get("query")
        except ArgumentsError:
            query = None
        tools = await self.find(query) if isinstance(query, str) and query.strip() else []
        # What a search loaded stays loaded for the conversation: send only what is new, within the budget.
        room = max(self._budget() - 1 - len(self._found), 0)
        tools = [tool for tool in tools if tool.name not in self._found][:room]
        self._note(tools, evict=False)
        view = dict(
            zip((t.name for t in self._adapter.tools), _full_view(self._adapter, "responses"), strict=True)
        )
        return search_output(call_id, [view[tool.name] for tool in tools])

    def _note(self, tools: list[PublishedTool], *, evict: bool = True) -> None:
        for tool in reversed(tools):  # the best ends last: most recent
            self._found.pop(tool.name, None)
            self._found[tool.name] = None
        while evict and len(self._found) > max(self._budget() - 1, 0):
            del self._found[next(iter(self._found))]

    def _budget(self) -> int:
        limit = self._adapter.max_tools
        return 10**9 if limit is None else limit

    async def _tools(self, fmt: Format, relevant_to: str | Iterable[Any]) -> list[dict[str, Any]]:
        if not isinstance(relevant_to, str):
            relevant_to = list(relevant_to)  # read twice below: an iterator would be spent
        view = _full_view(self._adapter, fmt)
        budget = self._budget()
        if len(view) <= budget:
            return list(view)
        tools = self._adapter.tools
        native = fmt == "responses" and self._native
        if native:  # tools a search loaded stay loaded: they take room, and are not listed again
            loaded = set(self._found) | _loaded(() if isinstance(relevant_to, str) else relevant_to)
            keep: list[str] = []
        else:
            loaded = set()
            keep = [name for name in reversed(self._found) if name != self.name][: budget - 1]
        room = max(budget - 1 - len(keep) - len(loaded), 0)
        if self._offered is not None:
            room = min(room, self._offered)
        chosen = set(keep)
        if room:
            # The conversation itself: ranked as the budget ranks it, toward its latest message.
            for tool, _ in await self._adapter.rank_tools(relevant_to):
                if len(chosen) >= len(keep) + room:
                    break
                if tool.name not in chosen and tool.name not in loaded and tool.name != self.name:
                    chosen.add(tool.name)
        listed = [entry for tool, entry in zip(tools, view, strict=True) if tool.name in chosen]
        return [self._search_tool(fmt, native, len(view)), *listed]

    def _search_tool(self, fmt: Format, native: bool, total: int) -> dict[str, Any]:
        description = (
            f"Search the {total} available tools: only some are offered now. Say what you need in a "
            "few words; the best matches can be called from your next step on."
        )
        if native:
            return {
                "type": "tool_search",
                "execution": "client",
                "description": description,
                "parameters": _PARAMETERS,
            }
        build = {"chat": chat_tool, "responses": responses_tool, "functions": legacy_function}[fmt]
        return build(self.name, description, _PARAMETERS, strict=False)


def _full_view(adapter: SearchedAdapter, fmt: Format) -> tuple[dict[str, Any], ...]:
    """Every published tool in `fmt`, in catalogue order (the adapter's cached tuple)."""
    if fmt == "chat":
        return cast("tuple[dict[str, Any], ...]", adapter.get_openai_tools(max_tools=None))
    if fmt == "responses":
        return cast("tuple[dict[str, Any], ...]", adapter.get_responses_tools(max_tools=None))
    return cast("tuple[dict[str, Any], ...]", adapter.get_openai_functions(max_tools=None))


def _loaded(items: Iterable[Any]) -> set[str]:
    """The names of the function tools that `tool_search_output` items among `items` loaded."""
    names: set[str] = set()
    for item in items:
        kind = item.get("type") if isinstance(item, Mapping) else getattr(item, "type", None)
        if kind != "tool_search_output":
            continue
        tools = item.get("tools") if isinstance(item, Mapping) else getattr(item, "tools", None)
        for tool in tools or ():
            name = tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", None)
            if isinstance(name, str):
                names.add(name)
    return names


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
