"""Answering the model's tool calls: read, each resolved and run on its peer, answered in its own shape.

A call's path goes down from here and comes back: `Answerer.dispatch` reads the calls
(`model.calls._calls`), resolves each name (`_catalogue`), prepares its arguments (`_published`),
runs it on its peer (`_dispatch`, which reaches the session and renders the result) and writes
the answers (`model.calls._answers`); no module below is entered twice for one call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
from mcp.shared.dispatcher import ProgressFnT

from ._catalogue import Catalogue, PublishedTool
from ._dispatch import CallProgress, Outcome, PeerEntry, Turn, run_on_peer
from ._dispatch import error as _error
from ._published import prepare_arguments
from ._tracing import traced_call, tracing
from .model._rich import chat_media_message, has_media, responses_output
from .model.arguments._arguments import ArgumentsError
from .model.calls._answers import answer
from .model.calls._calls import ToolCall, parse_tool_calls

if TYPE_CHECKING:
    from .groups._caller import GroupCaller
    from .groups._reputation import Reputation
    from .model.calls._answers import Answer
    from .model.calls._text_calls import Resolve

__all__ = ["UNSET", "Answerer"]

logger = logging.getLogger("mcpx_router")

UNSET: Any = object()
"""No per-call timeout was given: the tool's, then the peer's, then the adapter's applies."""


class Answerer:
    """Runs parsed tool calls against a catalogue and its peers and renders one answer per call.

    It reads the adapter's state (catalogue, peers) at call time and holds none of its own: peers
    joining and leaving between calls are seen by the next call.
    """

    def __init__(
        self,
        catalogue: Catalogue,
        peers: Mapping[str, PeerEntry],
        *,
        media: Literal["describe", "attach"],
        max_output_chars: int | None,
        on_progress: Callable[[CallProgress], object] | None,
    ) -> None:
        self._catalogue = catalogue
        self._peers = peers
        self._media = media
        self._max_output_chars = max_output_chars
        self.on_progress = on_progress
        """Called with each progress notification a peer sends about a running call."""
        self.reputation: Reputation | None = None
        """Where each call is recorded, when statistics are kept."""
        self.groups: GroupCaller | None = None
        """What runs calls to groups, once groups are asked for."""

    def written_names(self, *, unknown: bool = False) -> Resolve:
        """The public name a name the model wrote in its text calls (`text_calls=True`): a
        published name or a group's, as it is; a tool's own name (`get_weather` for
        `weather__get_weather`) when only one peer publishes it; else None (`unknown`: else the
        name as written, when it is written as a function's name, for its answer to name the
        close tools)."""
        catalogue = self._catalogue

        def resolve(name: str) -> str | None:
            if catalogue.lookup(name) is not None:
                return name
            if self.groups is not None and catalogue.group(name) is not None:
                return name
            owners = {tool.name for tool in catalogue.all_tools() if tool.tool == name}
            return owners.pop() if len(owners) == 1 else None

        if unknown:
            from .model.calls._text_calls import or_unknown

            return or_unknown(resolve)
        return resolve

    async def dispatch(self, tool_calls: Any, call_timeout: float | None, text_calls: bool) -> list[Answer]:
        """Read the calls in what `OpenAIPeerToolAdapter.dispatch` was given, run them, answer each."""
        if text_calls:
            from .model.calls._written_calls import text_call_items  # loaded by the first text_calls

            tool_calls = text_call_items(tool_calls, self.written_names())
        calls = parse_tool_calls(tool_calls)
        if len(calls) == 1:  # the usual turn: no task group
            return self.answers(calls, [await self.run(calls[0], call_timeout)])
        return self.answers(calls, await self.run_all(calls, call_timeout))

    async def run_all(self, calls: list[ToolCall], call_timeout: float | None) -> list[Outcome]:
        """Run the calls concurrently; one outcome per call, in call order.

        Calls to a peer with a slot limit (`max_concurrency`) take its slots in call order: each
        waits until the one before it to that peer has a slot (or was answered without one), so
        with one slot they reach the peer one at a time in call order, whatever order the event
        loop starts their tasks in (trio varies it on purpose).
        """
        if not calls:
            return []
        outcomes = [_NOT_RUN] * len(calls)
        turns = self._turns(calls)

        async def run(index: int) -> None:
            turn = turns[index]
            try:
                outcomes[index] = await self.run(calls[index], call_timeout, turn)
                if turn is not None and turn[0] is not None and not turn[1].is_set():
                    await turn[0].wait()  # answered without a slot: passes its turn on in order
            finally:
                if turn is not None:
                    turn[1].set()  # however the call ended, the next one to its peer may go

        async with anyio.create_task_group() as tg:
            for index in range(1, len(calls)):
                tg.start_soon(run, index)
            # The first call runs in this task, one task fewer to start; it still goes out first,
            # since the tasks only start once this one waits.
            await run(0)
        return outcomes

    def _turns(self, calls: list[ToolCall]) -> list[Turn | None]:
        """For each call to a peer with a slot limit: the turn of the call before it to that peer
        (None for the first), and its own, set once it has a slot or was answered without one."""
        last: dict[str, anyio.Event] = {}
        turns: list[Turn | None] = []
        for call in calls:
            tool = self._catalogue.lookup(call.name)
            peer = self._peers.get(tool.peer) if tool is not None else None
            if tool is None or peer is None or peer.limiter is None:
                turns.append(None)
                continue
            mine = anyio.Event()
            turns.append((last.get(tool.peer), mine))
            last[tool.peer] = mine
        return turns

    def answers(self, calls: list[ToolCall], outcomes: list[Outcome]) -> list[Answer]:
        """One answer per call in call order, then any media message."""
        if self._media != "attach":
            if len(calls) == 1 == len(outcomes):  # the usual turn, without building a zip
                return [answer(calls[0], outcomes[0].text)]
            return [answer(call, o.text) for call, o in zip(calls, outcomes, strict=True)]
        answers = [self.answer(call, o) for call, o in zip(calls, outcomes, strict=True)]
        media = [
            (call.call_id or "", call.name, o.result)
            for call, o in zip(calls, outcomes, strict=True)
            if call.shape == "chat" and o.result is not None and has_media(o.result)
        ]
        follow_up = chat_media_message(media)
        if follow_up is not None:
            answers.append(cast("Answer", follow_up))  # a ChatCompletionUserMessageParam
        return answers

    def answer(self, call: ToolCall, outcome: Outcome) -> Answer:
        """The answer to one call, in the call's own shape."""
        if self._media == "attach" and call.shape == "responses" and has_media(outcome.result):
            assert outcome.result is not None
            heading = f"Error: {call.name} reported a failure:" if outcome.is_error else None
            output = responses_output(
                outcome.result, outcome.text, limit=self._max_output_chars, heading=heading
            )
            return answer(call, output)
        return answer(call, outcome.text)

    async def run(self, call: ToolCall, call_timeout: float | None, turn: Turn | None = None) -> Outcome:
        """Resolve the call's name, prepare its arguments and run it on its peer.

        With OpenTelemetry configured it runs inside its `execute_tool` span. `turn` orders it
        among a batch's calls to a peer with a slot limit (`run_all`).
        """
        if tracing():
            return await traced_call(call, self._run(call, call_timeout, turn))
        return await self._run(call, call_timeout, turn)

    def _run(
        self, call: ToolCall, call_timeout: float | None, turn: Turn | None = None
    ) -> Awaitable[Outcome]:
        """The awaitable that runs the call (for a call that cannot run, one that answers it)."""
        if call.problem is not None:
            return _ready(_error(call.problem, kind="invalid_call"))
        tool = self._catalogue.lookup(call.name)
        peer = self._peers.get(tool.peer) if tool is not None else None
        if tool is None or peer is None:
            group = self._catalogue.group(call.name) if self.groups is not None else None
            if group is not None and self.groups is not None:
                return self.groups.run(call, group, call_timeout, UNSET)
            return _ready(_error(self._catalogue.why_unknown(call.name), kind="unknown_tool"))
        try:
            arguments = prepare_arguments(tool, call.arguments)
        except ArgumentsError as exc:
            message = f"{call.name} was not called. {exc}"
            refused = _error(message, tool, "invalid_arguments")
            if self.reputation is not None:
                self.reputation.refused(tool.key, call.call_id, refused)
            return _ready(refused)
        limit = peer.tool_timeouts.get(tool.tool, peer.timeout) if call_timeout is UNSET else call_timeout
        running = run_on_peer(
            peer,
            tool,
            call.name,
            arguments,
            limit,
            max_output_chars=self._max_output_chars,
            progress=None if self.on_progress is None else self.progress_reporter(tool, call.call_id),
            turn=turn,
        )
        if self.reputation is None:
            return running
        return self.reputation.timed(tool.key, call.call_id, running)

    def progress_reporter(self, tool: PublishedTool, call_id: str | None) -> ProgressFnT | None:
        report = self.on_progress
        if report is None:
            return None

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            try:
                version = self._catalogue.version
                report(
                    CallProgress(tool.peer, version, tool.name, tool.tool, call_id, progress, total, message)
                )
            except Exception:
                logger.exception("on_progress raised")

        return progress


async def _ready(outcome: Outcome) -> Outcome:
    return outcome


_NOT_RUN = _error("the call was not run")
