"""CodeMode: the peers' tools as a typed Python API, offered to the model as two functions.

Instead of one OpenAI function per tool, the model is offered `run_python(code)` and
`find_tools(query)`. A program calls the tools as functions grouped by peer
(`git.git_log(repo_path="/srv/app", max_count=3)`), in pydantic-monty's sandbox; each call goes
through the adapter's own dispatch, and the program's printed text, last value and calls made are
the answer. Prompts stay the same size however many tools there are, and a task of several
dependent calls is one round trip.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, cast

import anyio
import anyio.to_thread

from .._dispatch import check_timeout
from .._errors import UsageError
from .._naming import is_legal_name
from ..model._schema import chat_tool, legacy_function, responses_tool
from ..model.arguments._arguments import ArgumentsError, parse_arguments
from ..model.calls._answers import answer
from ..model.calls._calls import parse_tool_calls
from ._api import SandboxApi, describe_found
from ._result import ProgramResult, SandboxLimits
from ._sandbox import Approve, run_call, run_program
from ._unoffered import ran_directly, search_words, what_to_call

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam
    from openai.types.shared_params import FunctionDefinition

    from .._adapter import OpenAIPeerToolAdapter
    from .._catalogue import PublishedTool
    from .._dispatch import Outcome

__all__ = ["CodeMode"]

_CODE = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The Python program to run."}},
    "required": ["code"],
    "additionalProperties": False,
}
_QUERY = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What the user needs done, in the user's own words."}
    },
    "required": ["query"],
    "additionalProperties": False,
}
_RUN_ABOUT = """\
Run a Python program in a sandbox (a subset of Python: no files, network or imports beyond \
json, re, math, datetime and the like). The tools are functions grouped by namespace, called \
with keyword arguments, e.g. `git.git_log(repo_path="/srv/app", max_count=3)`; each returns a \
dict (structured results) or a str. A failed call raises an exception whose message says why \
(catch it with `except Exception as e`). `find_tools(query)` inside the program, or the \
find_tools function, returns the signatures and docstrings of the functions that match a query: \
look a function up before you call it. The answer lists the calls made, what the program \
printed and the value of its last line. Do several dependent steps in one program.
Namespaces (functions):
"""
_FIND_ABOUT = (
    "Find the sandbox functions for a task: their Python signatures and docstrings, most relevant "
    "first. Call them in run_python."
)


class CodeMode:
    """An adapter's tools as a typed Python API for programs the model writes (`pydantic-monty`).

    Example:
        ```python
        async with CodeMode(router.adapter) as code:
            reply = await client.chat.completions.create(
                model=model, messages=messages, tools=code.chat_tools()
            )
            messages.append(reply.choices[0].message)
            messages += await code.dispatch(reply.choices[0].message.tool_calls)
        ```

    Args:
        adapter: The adapter whose tools programs call (a Router's: `router.adapter`); each call
            goes through its dispatch, with its names, checks, repairs, groups, timeouts and limits.
        limits: What one program may use (`SandboxLimits`).
        allow: Which tools programs see (None: all). `lambda tool: not tool.destructive`
            keeps out those that do not declare themselves read-only or non-destructive.
        approve: Asked before each call of a destructive tool, with its `ToolFunction` and the
            arguments: True runs it; anything else (False, a failure of the check itself) refuses
            it, and the program gets a `PermissionError`. May be async. None: calls run unasked,
            except those of tools that declare themselves destructive (`destructiveHint: true`),
            which are refused unless `allow_destructive`.
        allow_destructive: Without `approve`, let programs call the tools that declare themselves
            destructive. By default (False) such tools are listed, marked as not callable, and a
            call raises `PermissionError` without reaching the peer. Tools without annotations
            are not affected.
        call_timeout: Seconds each tool call may take, overriding the adapter's default.
        max_found: The most functions one `find_tools` lists.
        workers: The most programs run at once (one sandbox worker process each).
        run_name, find_name: The names the model sees the two functions under.
        direct_calls: Run a call the model makes of a tool by its own name (`peer__tool`, or
            `peer.tool` as a program calls it) as the one-line program that calls it, with the
            same checks, approval and limits, the answer saying so. By default (False) such a
            call is refused and answered with the signature a program would call.
    """

    def __init__(
        self,
        adapter: OpenAIPeerToolAdapter,
        *,
        limits: SandboxLimits | None = None,
        allow: Callable[[PublishedTool], bool] | None = None,
        approve: Approve | None = None,
        allow_destructive: bool = False,
        call_timeout: float | Literal["adapter"] | None = "adapter",
        max_found: int = 8,
        workers: int = 2,
        run_name: str = "run_python",
        find_name: str = "find_tools",
        direct_calls: bool = False,
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise UsageError(f"workers must be a positive whole number, not {workers!r}")
        if isinstance(max_found, bool) or not isinstance(max_found, int) or max_found < 1:
            raise UsageError(f"max_found must be a positive whole number, not {max_found!r}")
        if call_timeout != "adapter":
            check_timeout(call_timeout)
        for name in (run_name, find_name):
            if not isinstance(name, str) or not is_legal_name(name):
                raise UsageError(f"a function name must match ^[a-zA-Z0-9_-]{{1,64}}$, not {name!r}")
        if run_name == find_name:
            raise UsageError(f"run_name and find_name must differ, not both {run_name!r}")
        for flag, value in (("allow_destructive", allow_destructive), ("direct_calls", direct_calls)):
            if not isinstance(value, bool):
                raise UsageError(f"{flag} must be True or False, not {value!r}")
        if approve is not None and not callable(approve):
            raise UsageError(f"approve must be a function (sync or async), not {type(approve).__name__}")
        if limits is not None and not isinstance(limits, SandboxLimits):
            raise UsageError(f"limits must be a SandboxLimits, not {type(limits).__name__}")
        self._adapter = adapter
        self.limits = limits if limits is not None else SandboxLimits()
        self._api = SandboxApi(adapter, allow, destructive_enabled=allow_destructive or approve is not None)
        self._call_timeout = call_timeout
        self._approve = approve
        self._max_found = max_found
        self._workers = workers
        self.run_name = run_name
        self.find_name = find_name
        self.direct_calls = direct_calls
        self._pool: Any = None

    async def __aenter__(self) -> Self:
        try:
            import pydantic_monty
        except ImportError as exc:  # the optional extra
            raise UsageError("code mode needs pydantic-monty: pip install 'mcpx-router[codemode]'") from exc
        pool = pydantic_monty.Monty(
            min_processes=1,
            max_processes=self._workers,
            request_timeout=self.limits.wall_time + 5,
        )
        await anyio.to_thread.run_sync(pool.__enter__)
        self._pool = pool
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: pool.__exit__(None, None, None))

    # -- what the model is offered ---------------------------------------------------------

    def description(self) -> str:
        """`run_python`'s description: how to program, and the namespaces there are."""
        return _RUN_ABOUT + self._api.overview()

    def chat_tools(self) -> tuple[ChatCompletionFunctionToolParam, ...]:
        """The Chat Completions `tools`: `run_python` and `find_tools`."""
        tools = (
            chat_tool(self.run_name, self.description(), _CODE),
            chat_tool(self.find_name, _FIND_ABOUT, _QUERY),
        )
        return cast("tuple[ChatCompletionFunctionToolParam, ...]", tools)

    def responses_tools(self) -> tuple[FunctionToolParam, ...]:
        """The Responses API `tools`: `run_python` and `find_tools`."""
        tools = (
            responses_tool(self.run_name, self.description(), _CODE),
            responses_tool(self.find_name, _FIND_ABOUT, _QUERY),
        )
        return cast("tuple[FunctionToolParam, ...]", tools)

    def functions(self) -> tuple[FunctionDefinition, ...]:
        """The legacy `functions` list."""
        tools = (
            legacy_function(self.run_name, self.description(), _CODE),
            legacy_function(self.find_name, _FIND_ABOUT, _QUERY),
        )
        return cast("tuple[FunctionDefinition, ...]", tools)

    # -- as a source of tools for the framework integrations (`version`, `tools`, `call`) ----

    @property
    def version(self) -> int:
        """Changes when the adapter's catalogue does (the namespaces in the description with it)."""
        return self._adapter.version

    @property
    def tools(self) -> tuple[PublishedTool, ...]:
        """`run_python` and `find_tools` as published tools: what an integration offers of a
        `CodeMode` given in place of a Router (`RouterToolset(code)`, `LangChainTools(code)`...)."""
        from .._catalogue import PublishedTool

        return tuple(
            PublishedTool(
                name=name, peer="", tool=name, description=about, parameters=schema, input_schema=schema
            )
            for name, about, schema in (
                (self.run_name, self.description(), _CODE),
                (self.find_name, _FIND_ABOUT, _QUERY),
            )
        )

    def why_unknown(self, name: str) -> str:
        """What a call to `name` is answered with when it is neither `run_python` nor `find_tools`
        (as the adapter's `why_unknown`, without the `Error: `): the two functions there are."""
        return (
            f"there is no function named {name!r} here: call {self.run_name} with a program, "
            f"and {self.find_name} to find the functions a program can call"
        )

    def get_openai_tools(
        self, *, relevant_to: Any = None, max_tools: Any = None
    ) -> tuple[ChatCompletionFunctionToolParam, ...]:
        """As `chat_tools` (the arguments are those of the adapter's, and change nothing here)."""
        return self.chat_tools()

    async def call(self, name: str, arguments: Any) -> Outcome:
        """Answer a call of `run_python` or `find_tools` by name, as the adapter's `call` answers a
        tool's: a program that stopped early is an answer too (it says what ran); a call that is
        not one of the two, or has no usable argument, is an error outcome."""
        from .._dispatch import error, success

        text = await self._answer(name, arguments, None)
        if text.startswith("Error:") and not text.startswith("Error: the program stopped"):
            return error(text.removeprefix("Error: "), None, "invalid_call")
        return success(text, None, None)

    # -- running ---------------------------------------------------------------------------

    async def find_tools(self, query: str) -> str:
        """The signatures and docstrings of the functions most relevant to `query`."""
        return describe_found(await self._api.find(query, self._max_found), query)

    def signature(self, peer_id: str, tool: str) -> str:
        """How a program calls `peer_id`'s tool `tool`: its signature and docstring.

        Raises:
            UnknownToolError: The tool is not published, or programs may not call it.
        """
        from .._errors import UnknownToolError

        function = self._api.of_public(self._adapter.public_name(peer_id, tool))
        if function is None:
            raise UnknownToolError(f"programs may not call tool {tool!r} of peer {peer_id!r}", name=tool)
        return function.render()

    async def run(self, code: str) -> ProgramResult:
        """Run one program; what it printed, its last value, its calls, or why it stopped.

        Raises:
            UsageError: Outside `async with`.
        """
        if self._pool is None:
            raise UsageError(
                "use CodeMode in `async with CodeMode(adapter) as code:` before running programs"
            )
        if not isinstance(code, str):
            raise UsageError(f"code must be a str, not {type(code).__name__}")
        return await run_program(
            code, pool=self._pool, api=self._api, call=self._call, limits=self.limits, approve=self._approve
        )

    async def _call(self, public_name: str, arguments: dict[str, Any]) -> Outcome:
        if self._call_timeout == "adapter":
            return await self._adapter.call(public_name, arguments)
        return await self._adapter.call(public_name, arguments, call_timeout=self._call_timeout)

    def recover_text_calls(self, message: Any, *, unknown: bool = False, truncated: bool = False) -> Any:
        """The Chat assistant message to append instead of `message` when the model wrote its call
        of `run_python`/`find_tools` as text, or a fenced python block (`_written`); else None."""
        from ._written import chat_with_code

        return chat_with_code(message, self.run_name, self.find_name, unknown=unknown, truncated=truncated)

    def recover_text_call_items(
        self, response: Any, *, unknown: bool = False, truncated: bool = False
    ) -> Any:
        """As `recover_text_calls`, for a Responses reply: the input items to append instead of its output."""
        from ._written import responses_with_code

        names = (self.run_name, self.find_name)
        return responses_with_code(response, *names, unknown=unknown, truncated=truncated)

    async def dispatch(self, tool_calls: Any) -> list[Any]:
        """Answer the model's calls of `run_python` and `find_tools`, one answer per call in call
        order and in the call's own shape (Chat tool messages, Responses outputs, ...); programs
        run one after another, in the order called."""
        out: list[Any] = []
        for call in parse_tool_calls(tool_calls):
            out.append(answer(call, await self._answer(call.name, call.arguments, call.problem)))
        return out

    async def _answer(self, name: str, raw: Any, problem: str | None) -> str:
        if problem is not None:
            return f"Error: {problem}"
        if name not in (self.run_name, self.find_name):
            return await self._not_offered(name, raw)
        try:
            arguments = parse_arguments(raw)
        except ArgumentsError as exc:
            return f"Error: {exc}"
        key = "code" if name == self.run_name else "query"
        value = arguments.get(key)
        if not isinstance(value, str) or not value.strip():
            return f'Error: {name} takes one argument, {key} (a non-empty string): {{"{key}": "..."}}'
        if name == self.find_name:
            return await self.find_tools(value)
        return (await self.run(value)).text(self.limits.max_output_chars)

    async def _not_offered(self, name: str, raw: Any) -> str:
        """The answer to a call of a function that is not offered. A tool called by its public or
        qualified name runs as a one-line program (`direct_calls`) when its arguments are an
        object; otherwise the answer is what a program would call instead (that tool, else the
        closest few by the tool search's ranking of the name's words), as signatures."""
        exact = self._api.of_public(name)
        if exact is None and name.count(".") == 1:
            exact = self._api.function(*name.split("."))
        if exact is not None and self.direct_calls:
            try:
                arguments = parse_arguments(raw)
            except ArgumentsError:
                pass  # answered below, with the signature to call it by
            else:
                result = await run_call(
                    exact,
                    arguments,
                    api=self._api,
                    call=self._call,
                    limits=self.limits,
                    approve=self._approve,
                )
                return ran_directly(
                    name, exact, arguments, result, self.run_name, self.limits.max_output_chars
                )
        found = [exact] if exact is not None else await self._api.find(search_words(name), 3)
        return what_to_call(name, exact, found, self.run_name, self.find_name)
