"""What OpenAI accepts as a function's `parameters` in any mode, and `check_parameters`, a checker
for it (pure functions, no I/O).

`check_parameters` is written from the receiver's rules alone, not from the converter, so that the
tests can hold `convert_for_openai`'s output against it. The rules, as documented or as the API's
own 400 answers (`invalid_function_parameters`, "Invalid schema for function ...") show them:

* The parameters are checked against the JSON Schema 2020-12 meta-schema, formats included: the
  refusals quote it ("True is not of type 'array'", "[] is not of type 'object', 'boolean'",
  "None is not of type 'object', 'boolean'") and check `$id` as a URI reference ("... is not a
  'uri-reference'", griptape-ai/griptape#2150).
* The root is an object schema: `"type": "object"` ("schema must be a JSON Schema of 'type:
  \\"object\\"', got 'type: \\"array\\"'", vercel/ai#1485) with `properties` ("In context=(),
  object schema missing properties", github/github-mcp-server#1548).
* Every schema whose type is or lists `array` has `items` ("In context=('properties', 'paths'),
  array schema missing items", sigoden/aichat#1049; inside a type list: "In context=(...,
  'type', '0'), array schema missing items", tidewave-ai/tidewave_phoenix#224).
* The request body is JSON: no NaN or infinities, no text that UTF-8 cannot carry.

Strict tools must also pass `check_strict` (`_strict_rules`); `check_outbound` runs both.
A failure inside the checker is reported as a problem: it never counts as "valid".
"""

from __future__ import annotations

import functools
import json
import math
import re
import reprlib
from typing import Any, Final

from .strict._strict_limits import pointer
from .strict._strict_rules import check_strict

__all__ = ["check_outbound", "check_parameters"]

MAX_PROBLEMS: Final = 8
"""At most this many meta-schema violations are listed per schema."""

# Keywords of 2020-12 whose value is a subschema, a list of them, or a map of names to them (the
# applicator, unevaluated, content and core vocabularies, plus the two the meta-schema keeps).
SUBSCHEMA: Final = frozenset(
    {
        "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    }
)  # fmt: skip
SUBSCHEMA_LIST: Final = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
SUBSCHEMA_MAP: Final = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "dependencies"}
)

# RFC 3986, character by character: a URI reference holds only these characters and %-escapes,
# with at most one "#"; a URI also starts with a scheme.
_URI_CHAR: Final = r"(?:[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
_URI_REFERENCE: Final = re.compile(f"{_URI_CHAR}*(?:#{_URI_CHAR}*)?")
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def _is_uri_reference(value: object) -> bool:
    return not isinstance(value, str) or _URI_REFERENCE.fullmatch(value) is not None


def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or (_is_uri_reference(value) and _SCHEME.match(value) is not None)


@functools.cache
def _meta() -> Any:
    """The 2020-12 meta-schema validator, formats included; built on the first full check, so
    that jsonschema loads only when a schema needs more than the quick check."""
    # jsonschema ships no type information; the ignore stays valid if its stubs get installed.
    from jsonschema import Draft202012Validator, FormatChecker  # type: ignore[import-untyped, unused-ignore]

    formats = FormatChecker(Draft202012Validator.FORMAT_CHECKER.checkers)
    formats.checks("uri-reference")(_is_uri_reference)
    formats.checks("uri")(_is_uri)
    return Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=formats)


def check_outbound(parameters: Any, *, strict: bool) -> tuple[str, ...]:
    """Every reason the API would refuse `parameters` as sent (`strict: true` or not); () if none."""
    problems = check_parameters(parameters)
    if strict:
        try:
            problems += tuple(check_strict(parameters))
        except Exception as exc:  # a checker that fails has not found the schema valid
            problems += (f"#: the strict rules could not be checked ({type(exc).__name__}: {exc})",)
    return problems


def check_parameters(parameters: Any) -> tuple[str, ...]:
    """Every way `parameters` breaks what the API accepts in any mode, each with its path; () if none.

    Example:
        >>> check_parameters({"type": "object", "properties": {"xs": {"type": "array"}}})
        ('#/properties/xs: an array schema needs items',)
    """
    try:
        return () if _plainly_valid(parameters) else _full_check(parameters)
    except Exception as exc:  # a checker that fails has not found the schema valid
        return (f"#: the parameters could not be checked ({type(exc).__name__}: {str(exc)[:120]})",)


def _full_check(parameters: Any) -> tuple[str, ...]:
    """Every check, on the JSON text `parameters` would be sent as."""
    try:
        text = json.dumps(parameters, ensure_ascii=False, allow_nan=False, sort_keys=True)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        return (f"#: the parameters are not plain JSON ({type(exc).__name__}: {str(exc)[:120]})",)
    return _check_text(text)


@functools.lru_cache(maxsize=1024)
def _check_text(text: str) -> tuple[str, ...]:
    """The checks on the JSON text of a schema; cached, since many peers send the same schemas."""
    schema = json.loads(text)
    if not isinstance(schema, dict):
        return ("#: the parameters must be a JSON object schema",)
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append(f'#: the root must have "type": "object" (found {reprlib.repr(schema.get("type"))})')
    if not isinstance(schema.get("properties"), dict):
        problems.append("#: the root object must have properties")
    try:
        # The dynamic references of the meta-schema report one violation several times: once each.
        errors = sorted(
            {(tuple(map(str, e.absolute_path)), _message(e)): None for e in _meta().iter_errors(schema)}
        )
    except RecursionError:
        return (*problems, "#: nested too deeply to check")
    problems.extend(
        f"{pointer(at)}: {message} (JSON Schema 2020-12)" for at, message in errors[:MAX_PROBLEMS]
    )
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"#: {len(errors) - MAX_PROBLEMS} more meta-schema violations")
    problems.extend(_arrays_without_items(schema))
    return tuple(problems)


def _message(error: Any) -> str:
    """jsonschema's message, with the offending value shortened: it may be a whole subschema."""
    message: str = error.message
    shown = repr(error.instance)
    if len(shown) > 80 and message.startswith(shown):
        short = reprlib.repr(error.instance)
        message = (short if len(short) <= 80 else short[:77] + "...") + message[len(shown) :]
    return message[:400]


def _arrays_without_items(schema: dict[str, Any]) -> list[str]:
    found: list[str] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and "items" not in node:
            found.append(f"{pointer(path)}: an array schema needs items")
        for key, value in node.items():
            if key in SUBSCHEMA:
                stack.append((value, (*path, key)))
            elif key in SUBSCHEMA_LIST and isinstance(value, list):
                stack.extend((sub, (*path, key, str(i))) for i, sub in enumerate(value))
            elif key in SUBSCHEMA_MAP and isinstance(value, dict):
                stack.extend((sub, (*path, key, name)) for name, sub in value.items())
    return sorted(found)


# The quick path: the flat object of scalar properties most tools have is checked directly. -------

_SCALAR_TYPES: Final = frozenset({"string", "integer", "number", "boolean", "null"})


def _text(value: Any) -> bool:
    """A string JSON and UTF-8 can carry (no lone surrogates)."""
    if value.__class__ is not str:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalar(value: Any) -> bool:
    kind = value.__class__
    if kind is float:
        return math.isfinite(value)
    return kind is int or kind is bool or value is None or _text(value)


def _number(value: Any) -> bool:
    return value.__class__ is int or (value.__class__ is float and math.isfinite(value))


def _count(value: Any) -> bool:
    return value.__class__ is int and value >= 0


def _scalar_type(kind: Any) -> bool:
    if kind.__class__ is str:
        return kind in _SCALAR_TYPES
    return (
        kind.__class__ is list
        and bool(kind)
        and all(k.__class__ is str and k in _SCALAR_TYPES for k in kind)
        and len(set(kind)) == len(kind)
    )


def _enum(values: Any) -> bool:
    if values.__class__ is not list:
        return False
    for value in values:
        if not (value.__class__ is str and value.isascii()) and not _scalar(value):
            return False
    return True


def _names(names: Any) -> bool:
    if names.__class__ is not list:
        return False
    for name in names:
        if not (name.__class__ is str and name.isascii()) and not _text(name):
            return False
    return len(set(names)) == len(names)


_PROPERTY_CHECKS: Final[dict[str, Any]] = {
    "type": _scalar_type,
    "title": _text,
    "description": _text,
    "format": _text,
    "enum": _enum,
    "minimum": _number,
    "maximum": _number,
    "minLength": _count,
    "maxLength": _count,
}


_TEXT_KEYWORDS: Final = frozenset({"title", "description", "format"})


def _plain_properties(properties: Any) -> bool:
    if properties.__class__ is not dict:
        return False
    for name, prop in properties.items():
        if prop.__class__ is not dict or not ((name.__class__ is str and name.isascii()) or _text(name)):
            return False
        for key, value in prop.items():
            if value.__class__ is str and value.isascii():  # most values: written out for speed
                if not (key in _TEXT_KEYWORDS or (key == "type" and value in _SCALAR_TYPES)):
                    return False
                continue
            check = _PROPERTY_CHECKS.get(key)
            if check is None or not check(value):
                return False
    return True


def _plainly_valid(schema: Any) -> bool:
    """True only for a flat object schema of scalar properties that breaks none of the rules.

    Anything else (and any doubt) gives False, and the full check runs.
    """
    if schema.__class__ is not dict or schema.get("type") != "object" or "properties" not in schema:
        return False
    for key, value in schema.items():
        if key == "properties":
            if not _plain_properties(value):
                return False
        elif key == "required":
            if not _names(value):
                return False
        elif key in ("title", "description"):
            if not ((value.__class__ is str and value.isascii()) or _text(value)):
                return False
        elif key == "additionalProperties":
            if value.__class__ is not bool:
                return False
        elif key != "type":
            return False
    return True
