"""OpenAIPeerToolAdapter: the tools of many MCP peers out to the model, its tool calls back in.

One idea: the adapter is the public face of its parts (catalogue, answerer, ranking, grouping),
so every public method is here, most of them a few lines that hand over to the part that holds
the work; the length is their signatures, typed overloads and docstrings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, Unpack, cast, overload

import anyio
import mcp_types as mt

from ._answering import UNSET, Answerer
from ._catalogue import Catalogue, Format, PublishedTool
from ._dispatch import CallProgress, Outcome, PeerEntry, backend_clock, check_limit, check_timeout, patterns
from ._errors import (
    AdapterClosedError,
    DuplicatePeerError,
    PeerUnavailableError,
    UnknownPeerError,
    UnknownToolError,
    UsageError,
)
from ._naming import ToolKey, check_peer_id, shown
from ._session import ToolSession, is_native, list_all_tools
from .groups._grouping import AdapterEvent, Grouping, GroupOptions
from .groups._groups import GroupInfo
from .groups._reputation import StatsReport
from .model._budget import MAX_TOOLS_PER_REQUEST
from .model._similar import GroupSuggestion
from .model._stemming import DEFAULT_LANGUAGE, check_language
from .model.calls._calls import parse_one_call, tool_call
from .relevance._embedding import Embedder, EmbeddingIndex
from .relevance._ranking import Ranking
from .relevance._rerank import Reranker

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionFunctionMessageParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessage,
        ChatCompletionToolMessageParam,
    )
    from openai.types.responses import (
        FunctionToolParam,
        Response,
        ResponseCustomToolCallOutputParam,
        ResponseInputItemParam,
    )
    from openai.types.responses.response_input_item_param import FunctionCallOutput
    from openai.types.shared_params import FunctionDefinition

    from .model.calls._answers import Answer, ChatAnswer, ResponsesAnswer
    from .model.calls._calls import (
        ChatCall,
        LegacyCall,
        ResponsesCustomCall,
        ResponsesFunctionCall,
        ResponsesItem,
    )

__all__ = ["DEFAULT_CALL_TIMEOUT", "OpenAIPeerToolAdapter", "Outcome"]

logger = logging.getLogger("mcpx_router")

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds a tool call may take before the model is told it timed out."""


class OpenAIPeerToolAdapter:
    """Publishes the tools of many MCP peers as one flat list of OpenAI functions and answers their calls.

    Example:
        ```python
        async with OpenAIPeerToolAdapter() as adapter:
            await adapter.add_peer("weather", weather_client)
            response = await openai.chat.completions.create(
                model=model, messages=messages, tools=adapter.get_openai_tools()
            )
            messages += await adapter.dispatch(response.choices[0].message.tool_calls or [])
        ```

    Args:
        call_timeout: Default seconds a tool call may take (None: no limit). Peers and calls may
            override it.
        max_tools: The most tools one request carries (OpenAI accepts 128). When the catalogue
            is larger, the tools most relevant to the conversation are chosen (`relevant_to`).
        description_limit: Descriptions are cut to this many characters (None: never).
        max_output_chars: A tool's text output is cut to about this many characters, with a
            marker saying so (None: never).
        media: "describe" tells the model what images, audio and files a tool returned;
            "attach" shows them to it: in Responses outputs as `input_image` / `input_file`
            parts, and after Chat tool messages as one user message with image parts.
        on_progress: Called with each progress notification a peer sends about a running call
            (kept as the `on_progress` attribute).
        strict: Offer tools in OpenAI's strict mode. True or None: every tool whose schema can
            be made strict is (optional properties then take `null`, which is removed again
            before the peer sees the call); the others are offered non-strict, and
            `strict_report()` says why (True also logs a warning for each). False: never.
        json_string_params: Offer object and array parameters as JSON strings (with an example
            in the description) for models that fumble nested schemas; they are decoded before
            the call.
        embedder: Texts in, vectors out (`LocalEmbedder()` on this machine, `OpenAIEmbedder`, or
            any callable): `select_tools` and `rank_tools` then blend embedding similarity into
            the ranking, and
            `suggest_groups` proposes groups of equivalent tools. None: lexical ranking only.
        stemmer: The language whose Snowball stemmer the lexical ranking compares words with
            ("commits" finds "commit"; "german", "spanish", ... as `snowballstemmer` names them),
            or None: words as they are.
        semantic_weight: The share of embedding similarity in the blended score (0 to 1; 0.5
            put the right tool among the first 8 of 5,000 most often with all-MiniLM-L6-v2 on
            the labelled requests of docs/evals.md).
        reranker: A second stage for `select_tools` and `rank_tools` (`LocalReranker()`, a
            cross-encoder on this machine, or any `Reranker`): it re-scores the first stage's
            `top` candidates against the latest user message, and they keep the first places
            in their new order. None: the first stage alone.
        on_event: Called with groups forming, changing and splitting, calls failing over to
            another member, and (with statistics) every call that finished.
        options: Groups of equivalent tools, statistics (see `GroupOptions`, docs/many-peers.md).
    """

    def __init__(
        self,
        *,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_tools: int | None = MAX_TOOLS_PER_REQUEST,
        description_limit: int | None = 1024,
        max_output_chars: int | None = 100_000,
        media: Literal["describe", "attach"] = "describe",
        on_progress: Callable[[CallProgress], object] | None = None,
        strict: bool | None = False,
        json_string_params: bool = False,
        embedder: Embedder | None = None,
        semantic_weight: float = 0.5,
        reranker: Reranker | None = None,
        stemmer: str | None = DEFAULT_LANGUAGE,
        on_event: Callable[[AdapterEvent], object] | None = None,
        **options: Unpack[GroupOptions],
    ) -> None:
        check_timeout(call_timeout)
        check_limit("max_tools", max_tools)
        check_limit("description_limit", description_limit, minimum=32)
        check_limit("max_output_chars", max_output_chars, minimum=64)
        if media not in ("describe", "attach"):
            raise UsageError(f"media must be 'describe' or 'attach', not {media!r}")
        if (
            isinstance(semantic_weight, bool)
            or not isinstance(semantic_weight, int | float)
            or not (0 <= semantic_weight <= 1)
        ):
            raise UsageError(f"semantic_weight must be a number from 0 to 1, not {semantic_weight!r}")
        if reranker is not None and not isinstance(reranker, Reranker):
            raise UsageError(
                f"reranker must have `top`, `weight` and be callable with (query, texts), not {reranker!r}"
            )
        self._call_timeout = call_timeout
        if strict not in (True, False, None):
            raise UsageError(f"strict must be True, False or None, not {strict!r}")
        self._catalogue = Catalogue(
            description_limit=description_limit,
            strict=strict,
            json_strings=bool(json_string_params),
            language=check_language(stemmer),
        )
        self._peers: dict[str, PeerEntry] = {}
        self._joining: set[str] = set()
        self._listings = 0
        """Refresh listings started so far; `_published` holds the one each peer's tools come from."""
        self._published: dict[str, int] = {}
        self._closed = False
        self._answerer = Answerer(
            self._catalogue,
            self._peers,
            media=media,
            max_output_chars=max_output_chars,
            on_progress=on_progress,
        )
        self._ranking = Ranking(
            self._catalogue,
            None if embedder is None else EmbeddingIndex(embedder),
            semantic_weight=float(semantic_weight),
            max_tools=max_tools,
            reranker=reranker,
        )
        self._grouping = Grouping(
            options,
            catalogue=self._catalogue,
            answerer=self._answerer,
            peers=self._peers,
            max_output_chars=max_output_chars,
            description_limit=description_limit,
            on_event=on_event,
        )

    @property
    def on_progress(self) -> Callable[[CallProgress], object] | None:
        """Called with each progress notification a peer sends about a running call."""
        return self._answerer.on_progress

    @on_progress.setter
    def on_progress(self, value: Callable[[CallProgress], object] | None) -> None:
        self._answerer.on_progress = value

    @property
    def on_event(self) -> Callable[[AdapterEvent], object] | None:
        """Called with group changes, failovers and (with statistics) every call that finished."""
        return self._grouping.on_event

    @on_event.setter
    def on_event(self, value: Callable[[AdapterEvent], object] | None) -> None:
        self._grouping.on_event = value

    async def __aenter__(self) -> Self:
        self._check_open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for peer in list(self._peers):
            self._withdraw(peer)
        if not self._closed:
            self._closed = True
            self._grouping.save_stats()

    # -- peers ------------------------------------------------------------------------------

    async def add_peer(
        self,
        peer_id: str,
        session: ToolSession,
        *,
        call_timeout: float | None = UNSET,
        max_concurrency: int | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        tool_timeouts: Mapping[str, float | None] | None = None,
        strict: bool | None = UNSET,
    ) -> tuple[str, ...]:
        """List the tools of a connected MCP session (all pages) and publish them as `peer_id__tool`.

        Nothing is registered unless the whole listing arrived: if listing fails or is cancelled,
        the adapter is as it was. A tool that cannot be offered (see `rejected_tools`) does not
        keep the others from being published.

        Args:
            peer_id: A non-empty id, unique among this adapter's peers: at most 128 characters,
                no control characters, no surrogates (see `check_peer_id`; InvalidPeerIdError).
            session: A connected `mcp.Client` or `mcp.ClientSession` (or anything with their
                `list_tools` / `call_tool`). The caller keeps owning it.
            call_timeout: Seconds a call to this peer may take; defaults to the adapter's `call_timeout`.
            max_concurrency: At most this many calls run on this peer at once (None: no limit).
                A batch's calls take the slots in call order: with 1, they run in call order.
            include: Glob patterns of tool names (as the peer spells them) to publish; None: all.
            exclude: Glob patterns of tool names never to publish.
            tool_timeouts: Seconds calls to particular tools (named as the peer spells them) may
                take, overriding `call_timeout`.
            strict: Strict mode for this peer's tools, as the adapter's `strict`; by default the adapter's.

        Returns:
            The public names of the tools published for this peer.
        """
        self._check_open()
        check_peer_id(peer_id)
        if peer_id in self._peers or peer_id in self._joining:
            raise DuplicatePeerError(
                f"a peer named {peer_id!r} is already registered; remove it first or choose another id",
                peer=peer_id,
            )
        if not callable(getattr(session, "call_tool", None)) or not callable(
            getattr(session, "list_tools", None)
        ):
            raise UsageError(
                f"peer {peer_id!r}: expected a connected mcp.Client or mcp.ClientSession, "
                f"got {type(session).__name__}"
            )
        if call_timeout is not UNSET:
            check_timeout(call_timeout)
        for limit in (tool_timeouts or {}).values():
            check_timeout(limit)
        if max_concurrency is not None and max_concurrency < 1:
            raise UsageError(f"max_concurrency must be at least 1 or None, not {max_concurrency!r}")
        if strict not in (True, False, None, UNSET):
            raise UsageError(f"strict must be True, False or None, not {strict!r}")
        # Everything that can be refused is refused before listing; nothing is registered until
        # the listing is complete and published, so a failure (or cancellation) leaves no trace.
        peer = PeerEntry(
            session=session,
            timeout=self._call_timeout if call_timeout is UNSET else call_timeout,
            limiter=anyio.CapacityLimiter(max_concurrency) if max_concurrency else None,
            include=patterns("include", include),
            exclude=patterns("exclude", exclude),
            tool_timeouts=dict(tool_timeouts or {}),
            native=is_native(session),
            clock=backend_clock(),
        )
        self._joining.add(peer_id)
        try:
            tools, held_back = await self._list(peer_id, session, refresh=False)
            self._check_open()
        finally:
            self._joining.discard(peer_id)
        if strict is not UNSET:
            self._catalogue.set_strict(peer_id, strict)
        self._catalogue.set_peer(peer_id, peer.offered(tools), peer.offered_names(held_back))
        self._peers[peer_id] = peer
        await self._ranking.warm_if_ranked()
        return tuple(tool.name for tool in self._catalogue.tools_of(peer_id))

    async def remove_peer(self, peer_id: str, *, reason: str | None = None) -> None:
        """Withdraw every tool of `peer_id`. The session itself is left to its owner.

        Calls to its tools are then answered with `reason` (by default, that the peer left).
        """
        self._check_open()
        if peer_id not in self._peers:
            raise UnknownPeerError(f"no peer named {peer_id!r} is registered", peer=peer_id)
        self._withdraw(peer_id, reason)

    def withdraw_tools(self, peer_id: str, *, reason: str) -> bool:
        """Stop offering `peer_id`'s tools but keep the peer and their names: `refresh_peer` restores them.

        Calls to the withdrawn names are answered with `reason`. Returns whether the catalogue changed.
        """
        if peer_id not in self._peers:
            raise UnknownPeerError(f"no peer named {peer_id!r} is registered", peer=peer_id)
        return self._catalogue.withdraw_peer(peer_id, reason)

    async def refresh_peer(self, peer_id: str) -> bool:
        """List `peer_id`'s tools again and publish what changed; return whether anything did.

        If listing fails (PeerUnavailableError) or is cancelled, what was published stays as it
        was. Of two refreshes of one peer that overlap, an older listing never replaces a newer one.
        """
        self._check_open()
        peer = self._peers.get(peer_id)
        if peer is None:
            raise UnknownPeerError(f"no peer named {peer_id!r} is registered", peer=peer_id)
        self._listings += 1
        listing = self._listings
        tools, held_back = await self._list(peer_id, peer.session, refresh=True)
        self._check_open()
        if self._peers.get(peer_id) is not peer or self._published.get(peer_id, 0) > listing:
            return False  # it left (or was replaced) while we listed, or a newer listing is published
        changed = self._catalogue.set_peer(peer_id, peer.offered(tools), peer.offered_names(held_back))
        self._published[peer_id] = listing
        if changed:
            await self._ranking.warm_if_ranked()
        return changed

    @property
    def peers(self) -> tuple[str, ...]:
        """The ids of the registered peers, in registration order."""
        return self._catalogue.peers

    def rejected_tools(self, peer_id: str) -> dict[str, str]:
        """Tools of `peer_id` that could not be published, each with the reason."""
        return dict(self._catalogue.rejected(peer_id))

    async def _list(
        self, peer_id: str, session: ToolSession, *, refresh: bool
    ) -> tuple[list[mt.Tool], dict[str, str]]:
        """The peer's tools, and the entries of its listing its transport held back as unreadable."""
        held_back: dict[str, str] = {}
        try:
            tools = await list_all_tools(session, peer=peer_id, refresh=refresh, held_back=held_back)
        except PeerUnavailableError:
            raise
        except Exception as exc:
            raise PeerUnavailableError(
                f"could not list the tools of peer {peer_id!r}: {type(exc).__name__}: {shown(str(exc))}",
                peer=peer_id,
            ) from exc
        for tool in tools:
            if not isinstance(tool, mt.Tool) or not isinstance(tool.name, str):
                raise PeerUnavailableError(
                    f"could not list the tools of peer {peer_id!r}: its session returned "
                    f"{shown(tool)} where an mcp_types.Tool belongs",
                    peer=peer_id,
                )
        return tools, held_back

    def _withdraw(self, peer_id: str, reason: str | None = None) -> None:
        self._peers.pop(peer_id, None)
        self._published.pop(peer_id, None)
        self._catalogue.remove_peer(peer_id, reason)

    def _check_open(self) -> None:
        if self._closed:
            raise AdapterClosedError("this adapter's `async with` block has ended; create a new adapter")

    # -- the catalogue ----------------------------------------------------------------------

    @property
    def max_tools(self) -> int | None:
        """The most tools one request carries (None: no limit)."""
        return self._ranking.max_tools

    @property
    def version(self) -> int:
        """Changes whenever the published tools change, and only then: re-send tools when it does."""
        return self._catalogue.version

    @property
    def tools(self) -> tuple[PublishedTool, ...]:
        """Every published tool, in peer registration order; with groups, as the tool lists show
        them: the groups' functions first (`peer` ""), members hidden by `hide_members` left out."""
        return self._catalogue.shown_tools()

    def tools_of(self, peer_id: str) -> tuple[PublishedTool, ...]:
        """The published tools of one peer (none if it is unknown or its tools are withdrawn)."""
        return self._catalogue.tools_of(peer_id)

    def get_openai_tools(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[ChatCompletionFunctionToolParam, ...]:
        """The Chat Completions `tools` list: one tuple per catalogue version, never changed once
        returned (a change of one peer rebuilds only that peer's entries); treat its dicts as read-only.

        Args:
            relevant_to: The conversation (messages or input items) or a query; when the
                catalogue holds more than `max_tools` tools, the most relevant are chosen.
            max_tools: Override the adapter's `max_tools` for this request.
        """
        return cast(
            "tuple[ChatCompletionFunctionToolParam, ...]", self._ranking.view("chat", relevant_to, max_tools)
        )

    def get_responses_tools(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[FunctionToolParam, ...]:
        """The Responses API `tools` list (flat function tools); as `get_openai_tools`."""
        return cast("tuple[FunctionToolParam, ...]", self._ranking.view("responses", relevant_to, max_tools))

    def get_openai_functions(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[FunctionDefinition, ...]:
        """The legacy `functions` list of `{name, description, parameters}`; as `get_openai_tools`."""
        return cast("tuple[FunctionDefinition, ...]", self._ranking.view("functions", relevant_to, max_tools))

    def strict_report(self) -> dict[str, tuple[str, ...]]:
        """Tools offered without strict mode although it was asked for, each with the reasons."""
        return self._catalogue.strict_report()

    def resolve(self, name: str) -> ToolKey:
        """The (peer, tool) published under a public name; raise UnknownToolError if none is."""
        tool = self._catalogue.lookup(name)
        if tool is None:
            raise UnknownToolError(f"no tool is published as {name!r}", name=name)
        return tool.key

    def why_unknown(self, name: str) -> str:
        """What a call to `name` is answered with when no tool is published under it, without the
        `Error: ` a call's text starts with: why it went away (its peer left, ...) or the close
        names. Nothing is called; a name published now gets the same words as one that never was."""
        return self._catalogue.why_unknown(name)

    def public_name(self, peer_id: str, tool: str) -> str:
        """The public name of `peer_id`'s tool `tool`; raise UnknownToolError if it is not published."""
        for entry in self._catalogue.tools_of(peer_id):
            if entry.tool == tool:
                return entry.name
        raise UnknownToolError(f"peer {peer_id!r} publishes no tool named {tool!r}", name=tool)

    # -- ranking ----------------------------------------------------------------------------

    async def rank_tools(self, relevant_to: str | Iterable[Any] | None) -> list[tuple[PublishedTool, float]]:
        """Every published tool with its relevance to a query or conversation, most relevant first
        (ties in catalogue order).

        The score is BM25 (0.0: no word in common) without an embedder; with one, the blend of BM25
        and embedding similarity, each scaled to [0, 1] over the catalogue, so 0.0 to 1.0. With a
        re-ranker, the candidates it re-scored come first, with their new score (0.0 to 1.0).

        Copies of one tool (several peers listing it alike: the same name, description and schema)
        are spread apart, so that the first places go to different tools: each copy ranks as if its
        score were lower by 0.3 of the first place's for every copy above it (never below the tools
        that score nothing). A copy may therefore follow a tool of lower score; the score given is
        its own.

        Raises:
            EmbeddingError: The embedder failed or returned unusable vectors.
        """
        return await self._ranking.rank_tools(relevant_to)

    @overload
    async def select_tools(
        self,
        fmt: Literal["chat"] = ...,
        *,
        relevant_to: str | Iterable[Any] | None = ...,
        max_tools: int | None = ...,
    ) -> tuple[ChatCompletionFunctionToolParam, ...]: ...
    @overload
    async def select_tools(
        self,
        fmt: Literal["responses"],
        *,
        relevant_to: str | Iterable[Any] | None = ...,
        max_tools: int | None = ...,
    ) -> tuple[FunctionToolParam, ...]: ...
    @overload
    async def select_tools(
        self,
        fmt: Literal["functions"],
        *,
        relevant_to: str | Iterable[Any] | None = ...,
        max_tools: int | None = ...,
    ) -> tuple[FunctionDefinition, ...]: ...
    async def select_tools(
        self,
        fmt: Format = "chat",
        *,
        relevant_to: str | Iterable[Any] | None = None,
        max_tools: int | None = UNSET,
    ) -> tuple[Any, ...]:
        """The tool list in `fmt` ("chat", "responses" or "functions") for one request, as the
        `get_*` methods give it, but ranked with embeddings when the adapter has an embedder.

        Without an embedder, or when every tool fits, it is exactly what `get_openai_tools` (or
        its Responses and legacy variants) returns. `max_tools` overrides the adapter's.
        """
        return await self._ranking.select_tools(fmt, relevant_to=relevant_to, max_tools=max_tools)

    async def suggest_groups(self, *, min_score: float = 0.5) -> list[GroupSuggestion]:
        """Groups of tools of different peers that look equivalent, by embedding similarity.

        Each suggestion's `score` is the least similarity between two of its members;
        `mcpx_router.as_aliases(suggestions, min_score=...)` turns those above a threshold into
        the `aliases` the groups option takes.

        Raises:
            UsageError: The adapter has no embedder.
            EmbeddingError: The embedder failed or returned unusable vectors.
        """
        return await self._ranking.suggest_groups(min_score=min_score)

    # -- groups and statistics --------------------------------------------------------------

    def set_aliases(self, aliases: Mapping[str, Any], *, auto_groups: bool | None = None) -> None:
        """Add groups (or replace those of the same names), e.g. suggestions the host accepts.

        Example:
            ```python
            adapter.set_aliases({"search": ["web/search", "docs/search"]})
            ```

        Args:
            aliases: As the `aliases` option; a group given an empty list of members is removed.
            auto_groups: Turn the grouping of tools alike on or off (None: leave it as it is).
        """
        self._grouping.set_aliases(aliases, auto_groups=auto_groups)

    def groups(self) -> tuple[GroupInfo, ...]:
        """Every group now: the host's (published or not, with the reason) and those found alike."""
        return self._grouping.groups()

    def stats(self) -> StatsReport:
        """Calls, failures by kind, latency percentiles and feedback, per peer and per (peer, tool).

        Raises:
            UsageError: Statistics are not kept: pass `stats=True` (they are whenever groups are).
        """
        return self._grouping.stats()

    def feedback(self, call_id: str, ok: bool, weight: float = 1.0) -> ToolKey:
        """Tell how good the answer to the tool call `call_id` was; it counts in that tool's and
        peer's reputation, which chooses the members of groups. Returns the (peer, tool) it counted for.

        Raises:
            UsageError: Statistics are not kept, the call id is not one answered recently, or
                `weight` is not a positive number.
        """
        return self._grouping.feedback(call_id, ok, weight)

    # -- the calls: what each returns is typed by what it is given -------------------------
    # Chat tool calls get `ChatCompletionToolMessageParam`s (`messages += await adapter.dispatch(
    # message.tool_calls)` type-checks with `messages: list[ChatCompletionMessageParam]`),
    # Responses items get `FunctionCallOutput` items (`input_items += ...` with
    # `list[ResponseInputItemParam]`), legacy function calls `ChatCompletionFunctionMessageParam`s;
    # calls of mixed types the union of them all. Plain dicts (`dict[str, Any]`) say nothing of
    # their shape to a type checker: their answers are typed `Any`.

    @overload
    async def dispatch(
        self,
        tool_calls: Iterable[ChatCall] | ChatCall | None,
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[ChatAnswer]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Response | Iterable[ResponsesItem] | ResponsesFunctionCall | ResponsesCustomCall,
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[ResponsesAnswer]: ...
    @overload
    async def dispatch(
        self, tool_calls: LegacyCall, *, call_timeout: float | None = ..., text_calls: bool = ...
    ) -> list[ChatCompletionFunctionMessageParam]: ...
    @overload
    async def dispatch(
        self, tool_calls: ChatCompletionMessage, *, call_timeout: float | None = ..., text_calls: bool = ...
    ) -> list[ChatAnswer | ChatCompletionFunctionMessageParam]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Iterable[Mapping[str, Any]] | Mapping[str, Any],
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[Any]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Iterable[ChatCall | ResponsesItem | LegacyCall | Mapping[str, Any]],
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[Answer]: ...
    async def dispatch(
        self, tool_calls: Any, *, call_timeout: float | None = UNSET, text_calls: bool = False
    ) -> list[Any]:
        """Answer every tool call, concurrently; one answer per call, in call order.

        A call to an unknown tool, malformed arguments, a failing or slow peer: each becomes an
        error answer for the model; nothing a model or a peer does makes this raise. With
        `media="attach"`, images that Chat tool calls returned follow the answers in one user
        message (Chat tool messages carry text only).

        Args:
            tool_calls: Chat Completions tool calls, Responses `function_call` items and legacy
                function calls, SDK objects or dicts, shapes mixed; or None, one call, an
                assistant message, a whole `Response`. Custom tool calls get an error answer;
                other Responses items (reasoning, calls the API ran...) are passed over.
            call_timeout: Seconds each call may take, overriding the peer's and adapter's default.
            text_calls: Given an assistant message that called nothing, or a `Response` without
                function calls, answer the calls the model wrote in its text instead
                (`recover_text_calls` gives the message to append, with the same ids).

        Raises:
            ToolCallFormatError: Something passed is no tool call of a known shape, or a call has
                no usable id, so its answer could not be matched to it (nothing runs).
        """
        if self._closed:
            self._check_open()
        if call_timeout is not UNSET:
            check_timeout(call_timeout)
        return await self._answerer.dispatch(tool_calls, call_timeout, text_calls)

    def recover_text_calls(
        self, message: Any, *, unknown: bool = False, truncated: bool = False
    ) -> ChatCompletionAssistantMessageParam | None:
        """The Chat assistant message to append instead of `message` when the model wrote its tool
        calls as text (Hermes `<tool_call>`, JSON, Mistral `[TOOL_CALLS]`, Llama
        `<|python_tag|>`, pythonic `[f(a=1)]`): with those calls as `tool_calls` and only the rest
        of the text as content; None when it holds none that can all be recovered (see
        docs/model.md). `dispatch(message, text_calls=True)` answers them, with the same ids.

        `unknown`: a call of a name no tool answers to is recovered too (its answer names the
        close tools). `truncated`: the reply was cut by its token limit (`finish_reason`
        "length"); the calls written whole before a cut last one are kept."""
        from .model.calls._written_calls import chat_with_text_calls

        resolve = self._answerer.written_names(unknown=unknown)
        recovered = chat_with_text_calls(message, resolve, truncated=truncated)
        return cast("ChatCompletionAssistantMessageParam | None", recovered)

    def recover_text_call_items(
        self, response: Any, *, unknown: bool = False, truncated: bool = False
    ) -> list[ResponseInputItemParam] | None:
        """As `recover_text_calls`, for a Responses reply (a `Response` or its `output`): the input
        items to append instead of its output, the written calls as `function_call` items."""
        from .model.calls._written_calls import responses_with_text_calls

        resolve = self._answerer.written_names(unknown=unknown)
        items = responses_with_text_calls(response, resolve, truncated=truncated)
        return cast("list[ResponseInputItemParam] | None", items)

    @overload
    async def execute_function_call(
        self, call: ChatCall, *, call_timeout: float | None = ...
    ) -> ChatCompletionToolMessageParam: ...
    @overload
    async def execute_function_call(
        self, call: ResponsesFunctionCall, *, call_timeout: float | None = ...
    ) -> FunctionCallOutput: ...
    @overload
    async def execute_function_call(
        self, call: ResponsesCustomCall, *, call_timeout: float | None = ...
    ) -> ResponseCustomToolCallOutputParam: ...
    @overload
    async def execute_function_call(
        self, call: LegacyCall, *, call_timeout: float | None = ...
    ) -> ChatCompletionFunctionMessageParam: ...
    @overload
    async def execute_function_call(
        self, call: Mapping[str, Any], *, call_timeout: float | None = ...
    ) -> Any: ...
    async def execute_function_call(self, call: Any, *, call_timeout: float | None = UNSET) -> Any:
        """Answer a single tool call (any shape `dispatch` accepts), in the call's own shape."""
        self._check_open()
        if call_timeout is not UNSET:
            check_timeout(call_timeout)
        parsed = parse_one_call(call)
        answerer = self._answerer
        return answerer.answer(parsed, await answerer.run(parsed, call_timeout))

    async def call(
        self, name: str, arguments: str | Mapping[str, Any] | None, *, call_timeout: float | None = UNSET
    ) -> Outcome:
        """Call a tool by public name with arguments (a JSON string or a dict) and say what became of it."""
        if self._closed:
            self._check_open()
        if call_timeout is not UNSET:
            check_timeout(call_timeout)
        return await self._answerer.run(tool_call("function", None, name, arguments), call_timeout)
