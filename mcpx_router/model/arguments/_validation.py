"""Checking a model's parsed arguments against the peer's original input schema with jsonschema,
with one line per problem for the model to read; pure, and no `$ref` is ever fetched over the network.

A check that cannot be completed never passes: when jsonschema fails on the peer's schema (a `$ref`
to nowhere, an unknown type, a regex Python cannot compile, nesting too deep to follow), the call
is refused with `ArgumentsError` saying so, and is not sent.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import referencing
import referencing.exceptions

# jsonschema ships no type information; the ignore stays valid if its stubs get installed.
from jsonschema import Draft202012Validator, validators  # type: ignore[import-untyped, unused-ignore]
from jsonschema.exceptions import (  # type: ignore[import-untyped, unused-ignore]
    SchemaError,
    UnknownType,
    ValidationError,
)

from ._arguments import (
    ArgumentsError,
    a_or_an,
    format_path,
    json_type,
    list_problems,
    parse_arguments,
    shorten,
)
from ._repair import repair_arguments

__all__ = [
    "ArgumentValidator",
    "prepare_arguments",
    "validate_arguments",
]

_T = TypeVar("_T")


def _never_retrieve(uri: str) -> referencing.Resource[Any]:
    # Fetching a peer-chosen URL would be a network call (and an SSRF hole) per tool call. A check
    # that needs another document (the JSON Schema metaschemas aside: jsonschema ships those)
    # cannot be completed, so the call is refused.
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REGISTRY: Final[referencing.Registry[Any]] = referencing.Registry(retrieve=_never_retrieve)  # type: ignore[call-arg]


def _validator_class(schema: object) -> Any:
    uri = schema.get("$schema") if isinstance(schema, Mapping) else None
    if isinstance(uri, str):
        # Peers write the draft URIs with and without "#" (handled by jsonschema) and "https".
        for candidate in (uri, uri.replace("https://json-schema.org/", "http://json-schema.org/", 1)):
            found: Any = validators.validator_for({"$schema": candidate}, default=Draft202012Validator)
            if found is not Draft202012Validator:
                return found
    return Draft202012Validator


class ArgumentValidator:
    """A tool's input schema, compiled once to check the arguments of many calls.

    The schema is applied as written, even when it is not valid JSON Schema for its draft
    (`problem` then says why): its valid parts are enforced, and a call on which jsonschema fails
    is refused, never let through unchecked.

    Typical use::

        validator = ArgumentValidator(tool.inputSchema)      # once, when the tools are listed
        arguments = validator.prepare(tool_call.arguments)   # per call; raises ArgumentsError

    Attributes:
        schema: The schema as given.
        problem: Why the schema is not valid JSON Schema for its draft, or None when it is.
    """

    __slots__ = ("_defect", "_quick", "_unusable", "_validator", "problem", "schema")

    def __init__(self, schema: object) -> None:
        self.schema = schema
        self.problem: str | None = None
        self._unusable: str | None = None  # why no arguments at all can be checked
        self._defect: str | None = None  # how the schema breaks its metaschema
        self._validator: Any = None  # a jsonschema Validator
        self._quick: Callable[[Any], bool] | None = None
        if not isinstance(schema, Mapping | bool):
            self.problem = self._unusable = f"it is {a_or_an(json_type(schema))}, not a JSON object"
            return
        cls = _validator_class(schema)
        loaded = _guarded(lambda: cls(schema, registry=_REGISTRY))
        if isinstance(loaded, Exception):  # the schema cannot even be loaded: every call is refused
            self.problem = self._unusable = _failure(loaded)
            return
        self._validator = loaded
        failed = _guarded(lambda: cls.check_schema(schema))
        if isinstance(failed, SchemaError):
            where = "".join(f"/{step}" for step in failed.absolute_path)
            self.problem = self._defect = f"at #{where}: {shorten(failed.message)}"
        elif isinstance(failed, Exception):  # too deep for the metaschema, ...: applied as written
            self.problem = f"it could not be checked against its metaschema: {_failure(failed)}"
        else:
            self._quick = quick_check(schema)

    def errors(self, args: object) -> list[str]:
        """Return every way `args` violates the schema, one line each, sorted by path.

        Each line reads `at <path>: <problem>`, e.g. `at $.options.timeout: 'abc' is not of type
        'number'`.

        Raises:
            ArgumentsError: The check could not be completed (the schema has a `$ref` to nowhere,
                an unknown type, ...): the arguments are neither valid nor invalid, so the call
                must not be sent.
        """
        if self._quick is not None and self._quick(args):  # plain type tests: nothing there can fail
            return []
        if self._unusable is not None:
            raise ArgumentsError(_uncheckable(self._unusable, None))
        found = _guarded(lambda: self._problems(args))
        if isinstance(found, RecursionError):  # a deep or looping schema, or deeply nested arguments
            raise ArgumentsError(_TOO_DEEP)
        if isinstance(found, Exception):  # see the module docstring: never "valid" by accident
            raise ArgumentsError(_uncheckable(_failure(found), self._defect))
        return found

    def _problems(self, args: object) -> list[str]:
        found = {_line(leaf) for error in self._validator.iter_errors(args) for leaf in _leaves(error)}
        return [line for _, line in sorted(found)]

    def prepare(self, raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """Parse, repair if needed, and validate the model's raw arguments.

        Arguments that already match the schema are returned as parsed: repair only runs on
        arguments that fail validation, so it never changes what the peer would have accepted.

        Raises:
            ArgumentsError: With a message for the model listing every problem, or saying that
                the schema could not be checked.
        """
        args = parse_arguments(raw)
        problems = self.errors(args)
        if problems:
            args = repair_arguments(args, self.schema)
            problems = self.errors(args)
        if problems:
            raise ArgumentsError(list_problems("The arguments do not match the tool's schema:", problems))
        return args


def _guarded(step: Callable[[], _T]) -> _T | Exception:
    """Run one jsonschema step; what it raises is returned instead, for the caller to refuse on."""
    try:
        return step()
    except Exception as exc:
        return exc
    except BaseException as exc:
        # A RecursionError inside the Rust maps of `referencing` surfaces as pyo3's PanicException,
        # a BaseException; it means the same as the RecursionError. Anything else goes on.
        if type(exc).__name__ != "PanicException":
            raise
        return RecursionError(str(exc))


_TOO_DEEP: Final = (
    "These arguments could not be checked against the peer's schema for this tool: following them "
    "through the schema nests too deeply (a schema nested a few hundred levels, a $ref that loops, "
    "or arguments nested that deep). The call was not sent; send less deeply nested arguments, or "
    "use another tool."
)


def _uncheckable(why: str, problem: str | None) -> str:
    if problem is not None:
        why += f"; the schema is not valid JSON Schema: {problem}"
    return (
        f"The peer's schema for this tool could not be checked against these arguments: {why}. "
        "The call was not sent; this tool cannot be used this way until its peer fixes the schema."
    )


def _failure(exc: Exception) -> str:
    """What went wrong inside jsonschema, in a sentence about the schema."""
    if isinstance(exc, RecursionError):
        return "it nests too deeply, or its $refs loop, to be followed"
    if isinstance(exc, referencing.exceptions.Unresolvable):
        ref = shorten(str(exc.ref))
        return f"the $ref {ref!r} does not resolve (only the schema's own parts are followed)"
    if isinstance(exc, UnknownType):
        return f"{shorten(repr(exc.type))} is not a JSON Schema type"
    if isinstance(exc, re.error):
        return f"the pattern {shorten(str(exc.pattern))!r} is not a regular expression Python can use"
    return f"{type(exc).__name__}: {shorten(str(exc))}"


_SCALAR_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    # 1.0 is an integer for some drafts and not others: the full validator decides that one.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "integer": (int,),
    "number": (int, float),
}
"""The exact types a property of each scalar type takes without a test of its own (a subclass, a
float where an integer is asked: the full validator decides)."""
_QUICK_ROOT = frozenset(
    {"type", "properties", "required", "title", "description", "$schema", "additionalProperties"}
)
_QUICK_PROPERTY = frozenset({"type", "title", "description", "default", "examples", "format", "enum"})


def quick_check(schema: object) -> Callable[[Any], bool] | None:
    """A fast test that says True only for arguments the full validator would accept.

    Most tool schemas are a flat object of scalar properties; for those, checking types,
    enums and required names directly is ten times cheaper than a full validation. Any other
    schema gets None, and so does a value the test is unsure of: the caller then validates fully.
    Only for schemas valid for their draft: it reads them as JSON Schema says.
    """
    # A root without a type takes any value: arguments are always objects, so that is "object".
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        return None
    if set(schema) - _QUICK_ROOT:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(extra, bool):
        return None
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return None
    exact: dict[str, frozenset[type]] = {}  # the usual property: its value's exact type is enough
    checks: dict[str, Callable[[Any], bool]] = {}  # the others (an enum)
    for name, prop in properties.items():
        check = _quick_property(prop)
        if check is None:
            return None
        if isinstance(check, frozenset):
            exact[name] = check
        else:
            checks[name] = check
    needed = tuple(required)

    def quick(args: Any) -> bool:
        if type(args) is not dict:
            return False
        for name in needed:
            if name not in args:
                return False
        for name, value in args.items():
            kinds = exact.get(name)
            if kinds is not None:
                if type(value) not in kinds:
                    return False
                continue
            check = checks.get(name)
            if check is None:
                if not extra:
                    return False
            elif not check(value):
                return False
        return True

    return quick


def _quick_property(prop: Any) -> frozenset[type] | Callable[[Any], bool] | None:
    """The exact types a property's value may have, or a test of the value; None when the
    property needs the full validator."""
    if not isinstance(prop, Mapping) or set(prop) - _QUICK_PROPERTY:
        return None
    kind = prop.get("type")
    kinds = [kind] if isinstance(kind, str) else kind
    if not isinstance(kinds, list) or not kinds or not all(k in _SCALAR_CHECKS for k in kinds):
        return None
    tests = tuple(_SCALAR_CHECKS[k] for k in kinds)
    enum = prop.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or not all(isinstance(e, str | int | float) for e in enum):
            return None
        # Strings only: JSON Schema's equality of numbers (1 == 1.0, True != 1) is not Python's.
        if not all(isinstance(e, str) for e in enum):
            return None
        allowed = frozenset(enum)
        return lambda v: isinstance(v, str) and v in allowed and any(t(v) for t in tests)
    return frozenset(exact for k in kinds for exact in _SCALAR_TYPES[k])


def _leaves(error: ValidationError) -> list[ValidationError]:
    # "{...} is not valid under any of the given schemas" hides the real mistake when a value
    # reaches into one anyOf/oneOf branch (an Optional model with a bad field): report the errors
    # of the branch that got deepest into the value instead, if it got deeper than the union.
    if error.context:
        deepest = max(error.context, key=lambda e: len(e.absolute_path))
        if len(deepest.absolute_path) > len(error.absolute_path):
            branch = deepest.relative_schema_path[0]
            # A `false` branch's error has an empty schema path (and never goes deeper).
            chosen = [e for e in error.context if list(e.relative_schema_path)[:1] == [branch]]
            return [leaf for e in chosen for leaf in _leaves(e)]
    return [error]


def _line(error: ValidationError) -> tuple[tuple[tuple[int, int | str], ...], str]:
    path: list[str | int] = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.validator_value, list):
        # Point at the missing property itself, where the model has to add it.
        path += [p for p in error.validator_value if error.message == f"{p!r} is a required property"][:1]
    key = tuple((0, step) if isinstance(step, int) else (1, step) for step in path)
    message = error.message
    if error.instance is None or isinstance(error.instance, bool):
        # jsonschema writes Python's None/True/False; the model wrote JSON's null/true/false.
        shown = repr(error.instance)
        if message.startswith(shown):
            message = ("null" if error.instance is None else str(error.instance).lower()) + message[
                len(shown) :
            ]
    return key, f"at {format_path(path)}: {shorten(message)}"


@functools.lru_cache(maxsize=256)
def _compiled(schema_json: str) -> ArgumentValidator:
    return ArgumentValidator(json.loads(schema_json))


def _validator_for(schema: object) -> ArgumentValidator:
    # Compiling costs about a millisecond (the schema is checked against its metaschema), while
    # writing the schema as a cache key costs microseconds.
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return ArgumentValidator(schema)
    return _compiled(key)


def validate_arguments(args: object, schema: object) -> list[str]:
    """Return every way `args` violates `schema` (see `ArgumentValidator.errors`).

    Keeps the last 256 compiled schemas; an `ArgumentValidator` per tool is still cheaper.

    Raises:
        ArgumentsError: The schema could not be checked against `args`.
    """
    return _validator_for(schema).errors(args)


def prepare_arguments(raw: str | Mapping[str, Any] | None, schema: object) -> dict[str, Any]:
    """Parse, repair and validate in one step (see `ArgumentValidator.prepare`).

    Raises:
        ArgumentsError: With a message for the model listing every problem, or saying that the
            schema could not be checked.
    """
    return _validator_for(schema).prepare(raw)
