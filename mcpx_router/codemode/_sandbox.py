"""One program run in the sandbox: pydantic-monty's interpreter, every host call answered here.

The program runs in a Monty worker process, which has no filesystem, network, environment or
subprocesses of its own. It is started with `feed_start`, so each thing it asks of the host
stops it as a snapshot that this module answers: a namespace's name (a peer's functions), a tool
call (through the adapter's own dispatch: `call`), `find_tools`, a sleep. Every OS call (files,
environment, imports of modules Monty lacks) gets Monty's own refusal, and any other name is a
`NameError`. The blocking steps of the worker's protocol run in a worker thread, so the event
loop (asyncio or trio) goes on while the program computes.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ._api import SandboxApi, describe_found
from ._result import CallRecord, ProgramResult, SandboxLimits

if TYPE_CHECKING:
    from .._dispatch import Outcome
    from ._signatures import ToolFunction

__all__ = ["Approve", "run_call", "run_program"]

logger = logging.getLogger("mcpx_router")

ToolCaller = Callable[[str, dict[str, Any]], Awaitable["Outcome"]]
Approve = Callable[["ToolFunction", dict[str, Any]], "bool | Awaitable[bool]"]
"""Asked before each call of a destructive tool: run it (True) or refuse it (False)."""
_LISTED = 12
"""A call of a function a namespace lacks is answered with all of its functions up to this many."""


class ToolNamespace:
    """The host side of a namespace object in the sandbox (its calls are answered by name)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<namespace {self.name}>"


def find_tools(query: str, limit: int = 10) -> str:
    """Stands for `find_tools` in the sandbox; its calls are answered by `_Run`."""
    raise AssertionError("answered by the host")  # pragma: no cover


class _Printed:
    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.omitted = 0
        self.limit = limit

    def __call__(self, stream: str, text: str) -> None:
        room = self.limit - self.size
        if room <= 0:
            self.omitted += len(text)
            return
        kept = text[:room]
        self.parts.append(kept)
        self.size += len(kept)
        self.omitted += len(text) - len(kept)


class _Run:
    """One program's answers to its snapshots."""

    def __init__(
        self,
        api: SandboxApi,
        call: ToolCaller,
        limits: SandboxLimits,
        result: ProgramResult,
        approve: Approve | None = None,
    ) -> None:
        self.api = api
        self.call = call
        self.approve = approve
        self.limits = limits
        self.result = result
        self.by_object: dict[Any, str] = {}
        self.objects: dict[str, Any] = {}
        self.held: dict[str, tuple[str, str]] = {}
        """Functions the program took as values (`f = git.git_log`), by their qualified name."""
        self.deadline = anyio.current_time() + limits.wall_time

    async def answer(self, snapshot: Any) -> Any:
        import pydantic_monty as pm

        if isinstance(snapshot, pm.NameLookupSnapshot):
            name = snapshot.variable_name
            if snapshot.object_id is None and name == "find_tools":
                return await _step(lambda: snapshot.resume(value=find_tools))
            if snapshot.object_id is None and self.api.namespace(name) is not None:
                return await _step(lambda: snapshot.resume(value=self._namespace(name)))
            namespace = self.by_object.get(snapshot.object_id) if snapshot.object_id is not None else None
            function = None if namespace is None else self.api.function(namespace, name)
            if function is not None:  # `f = git.git_log`: a host function standing for it
                return await _step(lambda: snapshot.resume(value=self._held(function)))
            return await _step(snapshot.resume)
        if isinstance(snapshot, pm.FunctionSnapshot):
            outcome = await self._function(snapshot)
            if outcome is None:  # Monty's own refusal: no file, socket, environment or subprocess here
                return await _step(snapshot.resume_not_handled)
            return await _step(lambda: snapshot.resume(outcome))
        # A future: nothing here hands the program one, so none can be pending.
        return await _step(lambda: snapshot.resume({}))

    def _held(self, function: ToolFunction) -> Callable[..., Any]:
        def stand_in(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("answered by the host")  # pragma: no cover

        # A dotted name is no Python identifier: no function of the program's own can have it.
        stand_in.__name__ = stand_in.__qualname__ = function.qualified
        self.held[function.qualified] = (function.namespace, function.function)
        return stand_in

    def _namespace(self, name: str) -> Any:
        import pydantic_monty as pm

        wrapped = self.objects.get(name)
        if wrapped is None:
            wrapped = self.objects[name] = pm.ClassInstance(ToolNamespace(name))
            self.by_object[wrapped.id] = name
        return wrapped

    async def _function(self, snapshot: Any) -> Any:
        name = snapshot.function_name
        if snapshot.is_os_function:
            if name.endswith("sleep") and snapshot.args and isinstance(snapshot.args[0], int | float):
                await anyio.sleep(
                    max(0.0, min(float(snapshot.args[0]), self.deadline - anyio.current_time()))
                )
                return {"return_value": None}
            return None
        namespace = self.by_object.get(snapshot.object_id) if snapshot.object_id is not None else None
        if namespace is not None:
            function = self.api.function(namespace, name)
            if function is None:
                return _raise(AttributeError(self._no_function(namespace, name)))
            return await self._tool(function, snapshot.args, snapshot.kwargs)
        if snapshot.object_id is None and name == "find_tools":
            return await self._find(snapshot.args, snapshot.kwargs)
        if snapshot.object_id is None and name in self.held:
            function = self.api.function(*self.held[name])
            if function is not None:
                return await self._tool(function, snapshot.args, snapshot.kwargs)
        if snapshot.object_id is not None:
            return _raise(AttributeError(f"the object has no method {name!r} the sandbox can call"))
        return _raise(NameError(f"name {name!r} is not defined"))

    def _no_function(self, namespace: str, name: str) -> str:
        functions = self.api.namespace(namespace) or {}
        close = difflib.get_close_matches(name, list(functions), n=3)
        if close:
            hint = f"; did you mean {', '.join(f'{namespace}.{c}' for c in close)}?"
        elif len(functions) <= _LISTED:  # a small namespace: all of it, rather than a search
            hint = f"; it has {', '.join(functions)}" if functions else "; it has none now"
        else:
            hint = ""
        return f"{namespace} has no function {name!r}{hint} (find_tools(query) lists what there is)"

    async def _refused(self, function: ToolFunction, arguments: dict[str, Any]) -> str | None:
        """Why the host's approval refused the call, or None when it approved it."""
        assert self.approve is not None
        try:
            if await _approved(self.approve, function, arguments):
                return None
        except Exception as exc:  # a failing check never approves
            logger.warning("the approval of %s failed: %r", function.qualified, exc)
            return "the host's approval check failed, so the call was not made"
        return "the host did not approve this call"

    def _over_budget(self) -> Any | None:
        if len(self.result.calls) >= self.limits.max_calls:
            return _raise(
                RuntimeError(
                    f"this program has made its {self.limits.max_calls} calls, the most one program may "
                    "make; finish with what you have, or run another program"
                )
            )
        return None

    async def _find(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if (over := self._over_budget()) is not None:
            return over
        query = args[0] if args else kwargs.get("query")
        limit = args[1] if len(args) > 1 else kwargs.get("limit", 10)
        if not isinstance(query, str) or not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            return _raise(TypeError("call find_tools(query: str, limit: int = 10)"))
        found = await self.api.find(query, min(limit, 50))
        self.result.calls.append(CallRecord("find_tools", {"query": query}, True, f"{len(found)} found"))
        return {"return_value": describe_found(found, query)}

    async def _tool(self, function: ToolFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if (over := self._over_budget()) is not None:
            return over
        try:
            arguments = function.bind(args, kwargs)
        except TypeError as exc:
            return _raise(exc)
        if not function.enabled:
            said = (
                f"{function.qualified} was not called: the tool declares itself destructive, and the host "
                "has not enabled destructive tools for programs (CodeMode(approve=...) asks before each "
                "call, allow_destructive=True allows them); tell the user, or do without it"
            )
            record = CallRecord(function.qualified, arguments, False, "not enabled", "not_enabled")
            self.result.calls.append(record)
            return _raise(PermissionError(said))
        if self.approve is not None and function.destructive:
            refused = await self._refused(function, arguments)
            if refused is not None:
                self.result.calls.append(
                    CallRecord(function.qualified, arguments, False, refused, "not_approved")
                )
                return _raise(PermissionError(f"{function.qualified} was not called: {refused}"))
        outcome = await self.call(function.public_name, arguments)
        if outcome.is_error:
            # The router's explanation, naming the function as the program knows it.
            message = outcome.text.removeprefix("Error: ").replace(function.public_name, function.qualified)
            first = message.strip().splitlines()[0] if message.strip() else "failed"
            self.result.calls.append(
                CallRecord(function.qualified, arguments, False, f"error: {first}", outcome.error_type)
            )
            kind = TimeoutError if outcome.error_type == "timeout" else RuntimeError
            named = message.startswith(function.qualified)
            said = message if named else f"{function.qualified} failed: {message}"
            return _raise(kind(said))
        self.result.calls.append(CallRecord(function.qualified, arguments, True, "ok"))
        return {"return_value": python_value(outcome, function.unwrap)}


async def _approved(approve: Approve, function: ToolFunction, arguments: dict[str, Any]) -> bool:
    answer = approve(function, arguments)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is True


def python_value(outcome: Outcome, unwrap: bool = False) -> Any:
    """A successful call's result as a Python value: its structured content (the value itself
    where the output schema only wraps it as `{"result": value}`), else its text."""
    result = outcome.result
    if result is not None and result.structured_content is not None:
        structured = result.structured_content
        if unwrap and isinstance(structured, dict) and list(structured) == ["result"]:
            return structured["result"]
        return structured
    return outcome.text


def _raise(exc: BaseException) -> dict[str, Any]:
    return {"exception": exc}


async def _step(step: Callable[[], Any]) -> Any:
    """One blocking turn of the worker's protocol, off the event loop (bounded by the limits)."""
    return await anyio.to_thread.run_sync(step)


def _describe(exc: BaseException) -> str:
    import pydantic_monty as pm

    if isinstance(exc, pm.MontyRuntimeError | pm.MontySyntaxError):
        return exc.display("traceback")
    if isinstance(exc, pm.MontyCrashedError):
        return f"the sandbox's worker stopped ({exc}); the program may be too large for its limits"
    return "".join(traceback.format_exception_only(exc)).strip()


async def run_program(
    code: str,
    *,
    pool: Any,
    api: SandboxApi,
    call: ToolCaller,
    limits: SandboxLimits,
    approve: Approve | None = None,
) -> ProgramResult:
    """Run `code` in a fresh sandbox session of `pool` and say what it did; never raises for
    anything the program does."""
    import pydantic_monty as pm

    result = ProgramResult()
    printed = _Printed(limits.max_printed_chars)
    run = _Run(api, call, limits, result, approve)
    session = pool.checkout(
        script_name="program.py",
        limits={
            "max_feed_duration_secs": limits.wall_time,
            "max_turn_duration_secs": limits.wall_time,
            "max_memory": limits.max_memory,
            "max_recursion_depth": limits.max_recursion_depth,
            # Tool calls are counted here (max_calls); sleeps and look-ups are bounded by the time.
            "max_suspensions": 100_000,
            "max_total_sleep_secs": limits.wall_time,
        },
    )
    try:
        await _step(session.__enter__)
    except pm.MontyError as exc:  # no worker could serve it: say so, as the answer
        result.error = f"the sandbox could not start the program: {_describe(exc)}"
        return result
    try:
        with anyio.move_on_after(limits.wall_time) as scope:
            try:
                snapshot = await _step(lambda: session.feed_start(code, print_callback=printed))
                while not isinstance(snapshot, pm.MontyComplete):
                    snapshot = await run.answer(snapshot)
                result.value = _host_value(snapshot.output)
            except pm.MontyError as exc:
                result.error = _describe(exc)
        if scope.cancelled_caught:
            result.error = (
                f"TimeoutError: the program ran past its {limits.wall_time:g} s limit (tool calls included) "
                "and was stopped"
            )
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await _step(lambda: session.__exit__(None, None, None))
            except pm.MontyError as exc:  # a worker that died already: the pool replaces it
                logger.debug("closing a sandbox session: %r", exc)
    result.printed = "".join(printed.parts)
    result.printed_omitted = printed.omitted
    return result


async def run_call(
    function: ToolFunction,
    arguments: dict[str, Any],
    *,
    api: SandboxApi,
    call: ToolCaller,
    limits: SandboxLimits,
    approve: Approve | None = None,
) -> ProgramResult:
    """One call of `function` with `arguments` as keywords, answered as the one-line program
    `namespace.function(**arguments)` would be (the same binding, enabling, approval, dispatch,
    limits and answer) without starting an interpreter; never raises for what the call does."""
    result = ProgramResult()
    run = _Run(api, call, limits, result, approve)
    with anyio.move_on_after(limits.wall_time) as scope:
        step = await run._tool(function, (), arguments)
    if scope.cancelled_caught:
        result.error = (
            f"TimeoutError: the call ran past the program's {limits.wall_time:g} s limit and was stopped"
        )
    elif "exception" in step:
        result.error = "".join(traceback.format_exception_only(step["exception"])).strip()
    else:
        result.value = _host_value(step["return_value"])
    return result


def _host_value(value: Any) -> Any:
    """The program's last value as plain data where it is (namespaces and sandbox objects as text)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_host_value(v) for v in value]
    if isinstance(value, dict):
        return {
            k if isinstance(k, str | int | float | bool) else repr(k): _host_value(v)
            for k, v in value.items()
        }
    return repr(value)
