"""What a peer lists, checked before it is published: sendable as JSON, and fingerprinted.

The `openai` SDK encodes a request as UTF-8 JSON without `NaN` or infinities
(`ensure_ascii=False, allow_nan=False`), so one unencodable string or number in one tool would
make every request fail. A tool's description, title and input schema are therefore encoded
the same way when it is listed:

- lone surrogates (which UTF-8 cannot carry) in the description, the title, or a `description`
  or `title` inside the schema are replaced by U+FFFD: that text only informs the model;
- anything else that cannot be encoded (a surrogate in a property name or an `enum`, `NaN`, an
  infinity, a value that is not JSON) rejects the tool, with the place it was found.

The encoding also tells a changed definition from the same one: it is exactly the JSON the
model's view is made of, so `1` and `1.0`, `0` and `false`, `0.0` and `-0.0`, and a different
key order all count as changes, as they do for the model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import math
import re
from collections.abc import Callable, Mapping
from json.encoder import c_encode_basestring, c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Final, TypeAlias

import mcp_types as mt

from .._errors import ToolConversionError
from .._naming import shown
from ._schema import convert_parameters

__all__ = ["SchemaHash", "checked_tool", "plain_key", "repair_text"]

SchemaHash: TypeAlias = hashlib.blake2b
"""A hash fed with a schema's JSON text: never updated once made (`_with_text` updates a copy)."""

_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=False
)
"""As the SDK encodes, without its cycle check (a quarter of the time): a cycle ends in RecursionError."""
_CHUNKS: Final[Callable[[Any, int], list[str]] | None] = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _ENCODER.default, c_encode_basestring, None, ":", ",", False, False, False)
)
"""The C encoder `_ENCODER.encode` makes on each call, made once."""
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_TEXT: Final = frozenset({"description", "title"})
"""Schema keywords whose string value only informs the model, and so may be repaired."""
_DATA: Final = frozenset({"enum", "const", "default", "examples"})
"""Schema keywords whose value is data: never repaired, never walked for keywords."""
_MAX_DEPTH: Final = 200


def repair_text(text: str) -> str:
    """`text` with each surrogate code point (never valid in UTF-8 text) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def plain_key(schema: Any) -> bytes | None:
    """The `marshal` bytes of `schema`, or None when marshal refuses it (a subclass, another type,
    nesting deeper than it goes). The bytes describe the tree completely (a container met twice
    is written once and referred to), so two trees with the same bytes have exactly the same types,
    values and key order, hence the same JSON text: a schema already encoded need not be encoded
    again. (Equal trees may still differ in bytes, by what else refers to their strings: a miss.)"""
    try:
        return marshal.dumps(schema)
    except ValueError:
        return None


def checked_tool(
    peer: str, tool: mt.Tool, known: SchemaHash | None = None
) -> tuple[mt.Tool, bytes, SchemaHash | None]:
    """The tool as it may be published (text repaired if need be), a fingerprint of its definition,
    and the hash of its input schema's JSON (None when the schema has no JSON of its own: a cycle,
    or nesting deeper than the conversion keeps).

    Two listings of a tool have the same fingerprint exactly when the JSON of their description,
    title and input schema is the same, and the same schema hash digest when the JSON of their
    input schemas is. `known`, the hash of a schema with the same `plain_key` (so the same JSON),
    spares encoding the schema again. Raises ToolConversionError when the tool cannot be sent.
    """
    if known is not None:
        with contextlib.suppress(ValueError, TypeError):  # unsendable text: repaired below
            return tool, _with_text(known, tool.description, tool.title), known
    try:
        return tool, *_fingerprint(tool.description, tool.title, tool.input_schema)
    except (ValueError, TypeError, RecursionError):  # UnicodeEncodeError is a ValueError
        tool = _repaired(tool)
    with contextlib.suppress(ValueError, TypeError, RecursionError):  # else: a cycle or depth, below
        return tool, *_fingerprint(tool.description, tool.title, tool.input_schema)
    # A cycle (in-process only) or nesting deeper than the conversion keeps: what is sent is the
    # conversion, which cuts both; if that is sendable, it is what the fingerprint covers.
    problem = _problem(tool.input_schema, "", 0, frozenset())
    if problem is None:
        try:
            converted = convert_parameters(tool.input_schema)
            return tool, _fingerprint(tool.description, tool.title, converted)[0], None
        except (ValueError, TypeError, RecursionError) as exc:
            problem = f"it cannot be encoded as JSON ({type(exc).__name__}: {exc})"
    raise ToolConversionError(
        f"tool {shown(tool.name)} of peer {shown(peer)} cannot be offered to OpenAI: {problem}",
        peer=peer,
        tool=tool.name,
    )


def _fingerprint(description: str | None, title: str | None, schema: Any) -> tuple[bytes, SchemaHash]:
    """The digest of the JSON of the whole definition, and the hash of the schema's JSON alone.

    One hash runs over the schema's JSON, then (after a NUL, which JSON text never holds raw) the
    JSON of the description and the title: its state after the schema is the schema's hash.
    """
    schema_hash = hashlib.blake2b(_encode(schema).encode(), digest_size=16)  # unsendable: raises
    return _with_text(schema_hash, description, title), schema_hash


def _with_text(schema_hash: SchemaHash, description: str | None, title: str | None) -> bytes:
    """The fingerprint of a definition whose schema's JSON hashed to `schema_hash` (left unchanged)."""
    hasher = schema_hash.copy()
    hasher.update(f"\x00{_string(description)},{_string(title)}".encode())  # a surrogate: raises
    return hasher.digest()


def _string(text: object) -> str:
    """The JSON of `text` (a string or None, as a `Tool` holds) as `_ENCODER` writes it."""
    return encode_basestring(text) if text.__class__ is str else _encode(text)


def _encode(value: Any) -> str:
    """`_ENCODER.encode(value)`."""
    return _ENCODER.encode(value) if _CHUNKS is None else "".join(_CHUNKS(value, 0))


def _repaired(tool: mt.Tool) -> mt.Tool:
    return tool.model_copy(
        update={
            "description": None if tool.description is None else repair_text(tool.description),
            "title": None if tool.title is None else repair_text(tool.title),
            "input_schema": _repair_schema(tool.input_schema, 0, frozenset()),
        }
    )


def _repair_schema(value: Any, depth: int, active: frozenset[int]) -> Any:
    """A copy of a schema with its `description` and `title` texts repaired (cycles and depth kept)."""
    if depth > _MAX_DEPTH or id(value) in active:
        return value  # left as it is: the encoding then fails, and says why
    if isinstance(value, Mapping):
        inner = active | {id(value)}
        return {
            key: repair_text(sub)
            if key in _TEXT and isinstance(sub, str)
            else sub
            if key in _DATA
            else _repair_schema(sub, depth + 1, inner)
            for key, sub in value.items()
        }
    if isinstance(value, list):
        inner = active | {id(value)}
        return [_repair_schema(item, depth + 1, inner) for item in value]
    return value


def _problem(value: Any, path: str, depth: int, active: frozenset[int]) -> str | None:
    """Where in `value` something JSON (as the SDK encodes it) cannot carry is, or None."""
    where = path or "the root"
    if isinstance(value, str):
        bad = _SURROGATE.search(value)
        if bad is None:
            return None
        return (
            f"its input schema holds text that is not valid Unicode at {where} (a lone surrogate, "
            f"U+{ord(bad.group()):04X}); the peer must send valid UTF-8"
        )
    if isinstance(value, bool | int) or value is None:
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"its input schema holds the number {value!r} at {where}, which JSON cannot carry"
    if depth > _MAX_DEPTH or id(value) in active:
        return None  # cut by the conversion
    inner = active | {id(value)}
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if not isinstance(key, str | int | float | bool) and key is not None:
                return f"its input schema has the key {shown(key)} at {where}; JSON keys are strings"
            key = str(key)
            problem = _problem(key, f"{path}/{_escape(key)}", depth + 1, inner)
            problem = problem or _problem(sub, f"{path}/{_escape(key)}", depth + 1, inner)
            if problem is not None:
                return problem
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = _problem(item, f"{path}/{index}", depth + 1, inner)
            if problem is not None:
                return problem
        return None
    return f"its input schema holds a {type(value).__name__} at {where}, which is not a JSON value"


def _escape(key: str) -> str:
    """A JSON Pointer token, shown without characters that could not be printed or sent."""
    token = key.replace("~", "~0").replace("/", "~1")
    return _SURROGATE.sub(lambda bad: f"\\u{ord(bad.group()):04x}", token)[:80]
