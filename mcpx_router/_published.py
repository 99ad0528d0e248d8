"""A tool as it is offered to the model, its three OpenAI forms, and the arguments its peer
receives for what the model wrote (no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ._naming import ToolKey
from .model._schema import chat_tool, legacy_function, responses_tool
from .model.arguments._arguments import ArgumentsError, list_problems, parse_arguments
from .model.arguments._repair import drop_optional_nulls, repair_arguments
from .model.strict._strict_outcome import strip_added_nulls

if TYPE_CHECKING:
    from .model.arguments._jsonstring import StringifyPlan
    from .model.arguments._validation import ArgumentValidator
    from .model.strict._strict import StrictOutcome

__all__ = ["BUILDERS", "Format", "PublishedTool", "prepare_arguments"]

Format = Literal["chat", "responses", "functions"]


@dataclass(slots=True, eq=False)
class PublishedTool:
    """One tool of one peer as it is offered to the model (read-only)."""

    name: str
    """The public name the model calls."""
    peer: str
    tool: str
    """The tool's name on its peer."""
    description: str
    parameters: dict[str, Any] = field(repr=False)
    """The JSON Schema the model sees: converted (no `default`s), and strict when `strict`. Tools
    whose peers list the same schema (the same JSON) may share one converted tree."""
    input_schema: Mapping[str, Any] = field(repr=False)
    """What the model's arguments are checked against: the peer's own input schema, untouched, or
    (when the model sees the plain conversion and it lost nothing) that conversion itself, which
    accepts exactly the same arguments, so the peer's tree need not be kept twice."""
    strict: bool = False
    """Whether `parameters` is in OpenAI's strict subset and offered with `strict: true`."""
    strict_outcome: StrictOutcome | None = field(default=None, repr=False)
    """How the strict conversion went (None when strict mode was not asked for)."""
    string_plan: StringifyPlan | None = field(default=None, repr=False)
    """Which parameters are offered as JSON strings (None when that mode is off)."""
    origin: tuple[str | None, str | None] = field(default=(None, None), repr=False)
    """The peer's description and title."""
    fingerprint: bytes = field(default=b"", repr=False)
    """A digest of the JSON of the peer's description, title and input schema (see `_listing`),
    to tell a changed definition from the same one."""
    repeat_safe: bool = field(default=False, repr=False)
    """The tool declares `readOnlyHint` or `idempotentHint`: running a call twice does no harm."""
    output_schema: Mapping[str, Any] | None = field(default=None, repr=False)
    """The peer's output schema for the tool's structured results, when it declares one."""
    destructive: bool = field(default=False, repr=False)
    """The tool may change things beyond repair: not read-only, and `destructiveHint` not false."""
    declared_destructive: bool = field(default=False, repr=False)
    """The tool says so itself: `destructiveHint: true`, and not `readOnlyHint: true`."""
    risk: int = field(default=2, repr=False)
    """What a call may do, as the tool declares it: 0 only reads (`readOnlyHint`), 1 only adds
    (`destructiveHint: false`), 2 may change or destroy (anything else: MCP's default). A tool of
    risk 1 or 2 is suggested to the model only on a strong match (`model/_search_hints.py`)."""
    _validator: ArgumentValidator | None = field(default=None, init=False, repr=False)

    _key: ToolKey | None = field(default=None, init=False, repr=False)

    @property
    def key(self) -> ToolKey:
        key = self._key
        if key is None:
            key = self._key = ToolKey(self.peer, self.tool)
        return key

    def validator(self) -> ArgumentValidator:
        """The peer's input schema compiled for checking arguments (compiled on first use)."""
        if self._validator is None:
            # jsonschema loads with the first call that is checked, not with the package.
            from .model.arguments._validation import ArgumentValidator

            self._validator = ArgumentValidator(self.input_schema)
        return self._validator


BUILDERS: dict[Format, Callable[[PublishedTool], dict[str, Any]]] = {
    "chat": lambda t: chat_tool(t.name, t.description, t.parameters, strict=t.strict),
    "responses": lambda t: responses_tool(t.name, t.description, t.parameters, strict=t.strict),
    "functions": lambda t: legacy_function(t.name, t.description, t.parameters, strict=t.strict),
}


def prepare_arguments(tool: PublishedTool, raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The model's raw arguments as the peer expects them, or ArgumentsError for the model.

    Parse (an empty string means {}), drop the nulls strict mode made the model send, decode
    JSON-string parameters, then check against the peer's original schema. If that finds problems,
    repair what the model evidently meant (a `null` for an optional parameter it meant to leave
    out, a JSON string where an object or array belongs) and check again; anything still wrong is
    listed, with paths. A check that cannot be completed refuses the call (see `_validation`).
    """
    args = parse_arguments(raw)
    if tool.strict_outcome is not None:
        args = strip_added_nulls(args, tool.strict_outcome)
    if tool.string_plan is not None:
        from .model.arguments._jsonstring import decode_stringified  # loaded with the JSON-string mode

        args = decode_stringified(args, tool.string_plan)
    validator = tool.validator()
    problems = validator.errors(args)
    if problems:
        args = repair_arguments(drop_optional_nulls(args, tool.input_schema), tool.input_schema)
        problems = validator.errors(args)
    if problems:
        raise ArgumentsError(list_problems("The arguments do not match the tool's schema:", problems))
    return args
