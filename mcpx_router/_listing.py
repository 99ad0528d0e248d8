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
import math
import re
from collections.abc import Callable, Mapping
from json.encoder import c_encode_basestring, c_make_encoder  # type: ignore[attr-defined]
from typing import Any, Final

import mcp_types as mt

from ._errors import ToolConversionError
from ._naming import shown
from .model._schema import convert_parameters

__all__ = ["checked_tool", "repair_text"]

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


def checked_tool(peer: str, tool: mt.Tool) -> tuple[mt.Tool, bytes, bytes | None]:
    """The tool as it may be published (text repaired if need be), a fingerprint of its definition,
    and a digest of its input schema's JSON (None when the schema has no JSON of its own: a cycle,
    or nesting deeper than the conversion keeps).

    Two listings of a tool have the same fingerprint exactly when the JSON of their description,
    title and input schema is the same, and the same schema digest when the JSON of their input
    schemas is. Raises ToolConversionError when the tool cannot be sent.
    """
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


def _fingerprint(description: str | None, title: str | None, schema: Any) -> tuple[bytes, bytes]:
    """Digests of the JSON of the whole definition and of the schema alone, each encoded once."""
    schema_key = hashlib.blake2b(_encode(schema).encode(), digest_size=16).digest()  # unsendable: raises
    text = _encode([description, title]).encode()
    return hashlib.blake2b(schema_key + text, digest_size=16).digest(), schema_key


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
