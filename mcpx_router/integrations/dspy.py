"""The router's tools as DSPy tools, for `dspy.ReAct` and any module that calls `dspy.Tool`s.

Install with `pip install 'mcpx-router[dspy]'`. Each published tool (`peer__tool`, a group's
function) becomes a `dspy.Tool` under its public name, with the description and arguments the
router publishes. Its call goes through the router, which checks and repairs the arguments
(DSPy's own check is left to it), fails over within a group, and answers: the observation is
the router's text (an error starts with "Error:" and says what to fix), with a `dspy.Image`
after it for each image the tool returned. `tool(**args)` blocks (a router from
`mcpx_router.sync`, or an async one used from another thread); `await tool.acall(**args)` is
what `dspy.ReAct.acall` awaits.

`dspy.ReAct` fixes its tools when it is made; `DSPyTools.react(...)` makes a `RouterReAct`,
which takes the router's current tools before every step, so a peer that joins mid-trajectory
can be called on the next step.

Example:
    ```python
    import dspy
    from mcpx_router import StdioPeer, sync
    from mcpx_router.integrations.dspy import DSPyTools

    with sync.Router() as router:
        router.join("weather", StdioPeer("python", ["weather.py"]))
        agent = DSPyTools(router).react("question -> answer")
        print(agent(question="Weather in Oslo?").answer)
    ```
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

import dspy
from dspy.adapters.types.tool import convert_input_schema_to_tool_args
from dspy.adapters.utils import get_annotation_name
from dspy.utils.callback import with_callbacks
from dspy.utils.exceptions import AdapterParseError
from pydantic_core import core_schema

from ._router_calls import RouterCalls, ToolRouter, images_of

if TYPE_CHECKING:
    from .._catalogue import PublishedTool
    from .._dispatch import Outcome

__all__ = ["DSPyTools", "RouterReAct", "RouterTool"]


def _observation(outcome: Outcome) -> Any:
    images = images_of(outcome)
    if not images:
        return outcome.text
    return [outcome.text, *(dspy.Image(image.data_url) for image in images)]


class _Call:
    """A published tool's call, blocking and awaited: what a `RouterTool` runs."""

    def __init__(self, calls: RouterCalls, name: str) -> None:
        self.calls = calls
        self.name = name

    def __call__(self, **arguments: Any) -> Any:
        return _observation(self.calls.call(self.name, arguments))

    async def acall(self, **arguments: Any) -> Any:
        return _observation(await self.calls.acall(self.name, arguments))


class RouterTool(dspy.Tool):  # type: ignore[misc]  # dspy ships no type information
    """One of the router's tools as a `dspy.Tool`: arguments go to the router unchecked by DSPy
    (the router validates them against the peer's own schema, repairs what it can and explains
    the rest), and the observation is the router's answer."""

    def __init__(self, calls: RouterCalls, published: PublishedTool | str) -> None:
        if isinstance(published, str):  # a name the router does not publish: it answers why
            name, desc, (args, arg_types, arg_desc) = published, "", ({}, {}, {})
        else:
            name, desc = published.name, published.description
            args, arg_types, arg_desc = convert_input_schema_to_tool_args(published.parameters)
        super().__init__(
            _Call(calls, name), name=name, desc=desc, args=args, arg_types=arg_types, arg_desc=arg_desc
        )

    def _validate_and_parse_args(self, **kwargs: Any) -> dict[str, Any]:
        return kwargs

    @with_callbacks  # type: ignore[untyped-decorator]
    async def acall(self, **kwargs: Any) -> Any:
        call: _Call = self.func
        return await call.acall(**kwargs)


class DSPyTools:
    """The router's tools as DSPy tools, kept current as peers join, leave and change.

    Args:
        router: A blocking router from `mcpx_router.sync` (sync and async DSPy programs), or a
            `Router` / `OpenAIPeerToolAdapter` made inside its event loop (`acall`, and sync
            calls from threads other than that loop's).
    """

    def __init__(self, router: ToolRouter) -> None:
        self._calls = RouterCalls(router)
        self._version: int | None = None
        self._tools: list[dspy.Tool] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self  # copies of a program (DSPy's optimizers copy them) share the live tools

    @property
    def version(self) -> int:
        """The router's catalogue version: it changes whenever its tools do."""
        return self._calls.router.version

    def tools(self) -> list[dspy.Tool]:
        """Every tool the router publishes now (the same objects while `version` stays)."""
        version = self.version
        if version != self._version:
            self._tools = [RouterTool(self._calls, published) for published in self._calls.router.tools]
            self._version = version
        return list(self._tools)

    def tool(self, name: str) -> dspy.Tool:
        """The tool published as `name`; for a name the router does not publish, a tool whose
        every call the router answers with its explanation (why it is gone, or close names)."""
        for tool in self.tools():
            if tool.name == name:
                return tool
        return RouterTool(self._calls, name)

    def react(
        self,
        signature: str | type[dspy.Signature],
        *,
        max_iters: int = 20,
        tools: Sequence[Callable[..., Any]] = (),
    ) -> RouterReAct:
        """A `dspy.ReAct` over the router's tools, and `tools` of your own, refreshed every step."""
        return RouterReAct(signature, self, max_iters=max_iters, tools=tools)


class RouterReAct(dspy.ReAct):  # type: ignore[misc]  # dspy ships no type information
    """`dspy.ReAct` whose tools are the router's as they are at each step of a trajectory.

    Before each step, when the router's tools changed, the tool list and the step signature
    (its instructions, the choice of `next_tool_name`) are made again; the step's predictor
    is kept, with its demos. Instructions an optimizer rewrote are replaced by ReAct's own.
    """

    def __init__(
        self,
        signature: str | type[dspy.Signature],
        toolset: DSPyTools,
        *,
        max_iters: int = 20,
        tools: Sequence[Callable[..., Any]] = (),
    ) -> None:
        super().__init__(signature, tools=[*toolset.tools(), *tools], max_iters=max_iters)
        self._toolset = toolset
        self._own_tools = list(tools)
        self._seen = toolset.version
        self._answer_any_name(self)

    def refresh(self) -> bool:
        """Take the router's current tools, if they changed; return whether they did."""
        version = self._toolset.version
        if version == self._seen:
            return False
        fresh = dspy.ReAct(self.signature, tools=[*self._toolset.tools(), *self._own_tools])
        self._answer_any_name(fresh)
        self.tools = fresh.tools
        self.react.signature = fresh.react.signature
        self._seen = version
        return True

    def _answer_any_name(self, react: dspy.ReAct) -> None:
        """Let `react`'s steps name any tool: the model is told the same choice, but a name that
        is no tool parses, and its call is the router's explanation as the observation (DSPy's
        own parse would end the program with `AdapterParseError`)."""
        names = tuple(react.tools)
        react.tools = _ToolsByName(react.tools, self._toolset)
        react.react.signature = react.react.signature.with_updated_fields(
            "next_tool_name", type_=_one_of(names)
        )

    # ReAct runs each step through these two methods (sync and async): the seam where the
    # tools are refreshed, so a step sees the tools that exist when it starts, and where a step
    # that cannot be read ends the trajectory (ReAct's `ValueError`) instead of the program.
    def _call_with_potential_trajectory_truncation(
        self, module: Any, trajectory: Any, **input_args: Any
    ) -> Any:
        call = super()._call_with_potential_trajectory_truncation
        if module is not self.react:
            return call(module, trajectory, **input_args)
        self.refresh()
        try:
            return call(module, trajectory, **input_args)
        except AdapterParseError as error:
            raise _unreadable(error) from error

    async def _async_call_with_potential_trajectory_truncation(
        self, module: Any, trajectory: Any, **input_args: Any
    ) -> Any:
        call = super()._async_call_with_potential_trajectory_truncation
        if module is not self.react:
            return await call(module, trajectory, **input_args)
        self.refresh()
        try:
            return await call(module, trajectory, **input_args)
        except AdapterParseError as error:
            raise _unreadable(error) from error


class _ToolsByName(dict[str, dspy.Tool]):
    """A ReAct's tools by name, where a name no tool answers to finds the router."""

    def __init__(self, tools: dict[str, dspy.Tool], toolset: DSPyTools) -> None:
        super().__init__(tools)
        self.toolset = toolset

    def __missing__(self, name: str) -> dspy.Tool:
        return self.toolset.tool(name)


def _unreadable(error: AdapterParseError) -> ValueError:
    """What ReAct's loop catches to end a trajectory, for a step whose fields could not be read
    (its arguments not an object, a field missing): the answer is then extracted from the steps
    so far, as when the model picks no valid tool."""
    return ValueError(f"the model's step could not be read ({error.adapter_name}): {error.lm_response!r}")


def _one_of(names: tuple[str, ...]) -> type:
    """The type of a step's `next_tool_name`. To DSPy's adapters, which describe the field to the
    model, it is `Literal[names]`, in the same words as `dspy.ReAct`'s; when they parse the
    model's answer, any text is a name (one that is no tool is then answered by the router)."""
    literal = Literal[names]  # type: ignore[valid-type]

    def schema(cls: type, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(_named, core_schema.str_schema())

    # DSPy names a type by its `__name__` and recognises a Literal by `__origin__`/`__args__`.
    namespace = {
        "__origin__": Literal,
        "__args__": names,
        "__get_pydantic_core_schema__": classmethod(schema),
    }
    return type(str(get_annotation_name(literal)), (), namespace)


def _named(value: Any) -> str:
    """The name the model wrote, less what DSPy strips from a Literal's value."""
    if not isinstance(value, str):
        return json.dumps(value)  # `true`, `3`: the adapter read the text as JSON
    text = value.strip()
    if text.startswith(("Literal[", "str[")) and text.endswith("]"):
        text = text[text.find("[") + 1 : -1]
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text
