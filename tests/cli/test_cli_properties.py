"""Properties of what the command reads and prints, over generated schemas, arguments and results:

- `key=value` is typed by the schema: a value of any type the schema names is read back as
  itself, any text given to a parameter that takes strings stays that text, and a value read
  is of a type the schema allows;
- a signature never fails and is always one line, whatever JSON the schema is;
- whatever `tools --json` and `call --json` print is valid JSON, on any output encoding.
"""

from __future__ import annotations

import io
import json
import math
import re
import unicodedata
from typing import Any

import mcp_types as mt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpx_router._catalogue import PublishedTool
from mcpx_router._errors import UsageError
from mcpx_router._naming import check_peer_id
from mcpx_router.cli._arguments import coerce, split_arguments, typed_arguments
from mcpx_router.cli._render import print_json, result_json, result_text, tools_document, tools_table, write
from mcpx_router.cli._signature import signature, type_text
from mcpx_router.cli._sources import command_id, url_id

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
"""Any text, lone surrogates and control characters included."""
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)
FINITE_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)
"""JSON values that JSON text can carry (no NaN or infinities)."""
KEYS = st.text(min_size=1, max_size=12).filter(
    lambda key: "=" not in key and not key.endswith(":") and not key.lstrip().startswith("{")
)

STRING_SCHEMAS = st.sampled_from(
    [
        {"type": "string"},
        {"type": ["string", "null"]},
        {"type": ["integer", "string"]},
        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        {"oneOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
        {},
        {"title": "untyped", "description": "anything"},
        {"$ref": "#/$defs/Text"},
    ]
)
"""Parameter schemas that take any string."""


def _typed() -> st.SearchStrategy[tuple[dict[str, Any], Any, str]]:
    """(a parameter's schema, a value of its type, the text that stands for it on the command line)."""
    integers = st.integers().map(lambda v: ({"type": "integer"}, v, str(v)))
    numbers = st.floats(allow_nan=False, allow_infinity=False).map(
        lambda v: ({"type": "number"}, v, json.dumps(v))
    )
    booleans = st.booleans().map(lambda v: ({"type": "boolean"}, v, json.dumps(v)))
    nulls = st.just(({"type": "null"}, None, "null"))
    int_lists = st.lists(st.integers(), min_size=1, max_size=5).map(
        lambda v: ({"type": "array", "items": {"type": "integer"}}, v, ",".join(map(str, v)))
    )
    word_lists = st.lists(
        st.text(min_size=1).filter(lambda w: "," not in w and not w.startswith("[")), min_size=1
    )
    words = word_lists.map(lambda v: ({"type": "array", "items": {"type": "string"}}, v, ",".join(v)))
    json_lists = st.lists(FINITE_JSON, max_size=4).map(lambda v: ({"type": "array"}, v, json.dumps(v)))
    objects = st.dictionaries(st.text(max_size=8), FINITE_JSON, max_size=4).map(
        lambda v: ({"type": "object"}, v, json.dumps(v))
    )
    enums = st.lists(
        (
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | ANY_TEXT
        ),
        min_size=1,
        max_size=5,
        unique_by=json.dumps,
    ).flatmap(
        lambda values: st.sampled_from(values).map(
            lambda v: ({"enum": values}, v, v if isinstance(v, str) else json.dumps(v))
        )
    )
    nullable = st.integers().map(lambda v: ({"type": ["integer", "null"]}, v, str(v)))
    union = st.lists(st.integers(), min_size=1, max_size=3).map(
        lambda v: (
            {"anyOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "integer"}}]},
            v,
            ",".join(map(str, v)),
        )
    )
    return (
        integers
        | numbers
        | booleans
        | nulls
        | int_lists
        | words
        | json_lists
        | objects
        | enums
        | nullable
        | union
    )


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON types all the way down (True is not 1)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and type(a) is type(b)


ROOT = {"$defs": {"Text": {"type": "string"}}}


@settings(max_examples=400, deadline=None)
@given(schema=STRING_SCHEMAS, key=KEYS, text=ANY_TEXT)
def test_any_text_for_a_parameter_that_takes_strings_stays_that_text(
    schema: dict[str, Any], key: str, text: str
) -> None:
    tool_schema = {"type": "object", "properties": {key: schema}, **ROOT}
    assert typed_arguments(split_arguments([f"{key}={text}"]), tool_schema) == {key: text}


@settings(max_examples=400, deadline=None)
@given(case=_typed(), key=KEYS)
def test_a_value_of_the_schemas_type_is_read_back_as_itself(
    case: tuple[dict[str, Any], Any, str], key: str
) -> None:
    schema, value, text = case
    tool_schema = {"type": "object", "properties": {key: schema}}
    got = typed_arguments(split_arguments([f"{key}={text}"]), tool_schema)[key]
    assert _same(got, value), (schema, text, got)
    assert typed_arguments(split_arguments([f"{key}:={json.dumps(value)}"]), {})[key] == value


def _allowed(schema: dict[str, Any], value: Any) -> bool:
    """Whether `value` is of a JSON type `schema` allows at its top level."""
    if "enum" in schema:
        return any(_same(value, option) for option in schema["enum"])
    if "anyOf" in schema:
        return any(_allowed(branch, value) for branch in schema["anyOf"])
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    checks = {
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
        "string": lambda v: isinstance(v, str),
    }
    return any(checks[kind](value) for kind in kinds)


@settings(max_examples=400, deadline=None)
@given(
    case=_typed(), text=ANY_TEXT | st.integers().map(str) | st.sampled_from(["true", "null", "[1]", "{}", ""])
)
def test_a_value_read_is_of_a_type_the_schema_allows(
    case: tuple[dict[str, Any], Any, str], text: str
) -> None:
    schema = case[0]
    try:
        value = coerce(text, schema)
    except ValueError as exc:  # UsageError too
        assert str(exc)  # says what was expected
        return
    assert _allowed(schema, value), (schema, text, value)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(ANY_TEXT, max_size=4))
def test_arguments_that_are_not_arguments_are_said_to_be(items: list[str]) -> None:
    try:
        raw = split_arguments(items)
    except UsageError as exc:
        assert str(exc)
        return
    assert all("=" in item or item.lstrip().startswith("{") for item in items)
    assert isinstance(raw.base, dict)


SCHEMAS = ANY_JSON | st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(ANY_TEXT, ANY_JSON, max_size=5)},
    optional={"required": st.lists(ANY_TEXT | st.integers(), max_size=3) | ANY_JSON, "$defs": ANY_JSON},
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=ANY_TEXT, schema=SCHEMAS)
def test_a_signature_never_fails_and_is_one_line(name: str, schema: Any) -> None:
    line = signature(name, schema)
    assert len(line.splitlines()) == 1
    # no control characters, lone surrogates, line or paragraph separators, bidirectional overrides
    assert not [ch for ch in line if unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp")]
    assert not set(line) & set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    line.encode("utf-8")
    assert len(type_text(schema)) <= 60


CONTENT = st.one_of(
    ANY_TEXT.map(lambda text: mt.TextContent(type="text", text=text)),
    st.binary(max_size=30).map(
        lambda data: mt.ImageContent(type="image", data=data.hex(), mime_type="image/png")
    ),
    st.builds(
        lambda uri, text: mt.EmbeddedResource(
            type="resource", resource=mt.TextResourceContents(uri=uri, text=text, mime_type="text/plain")
        ),
        st.sampled_from(["file:///a.txt", "memo://x"]),
        ANY_TEXT,
    ),
)
RESULTS = st.builds(
    lambda content, structured, error: mt.CallToolResult(
        content=content, structured_content=structured, is_error=error
    ),
    st.lists(CONTENT, max_size=4),
    st.none() | ANY_JSON,
    st.booleans(),
)


def _stream(encoding: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding)


def _printed(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode(stream.encoding)


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "cp1252"])
@settings(max_examples=200, deadline=None)
@given(result=st.none() | RESULTS, why=ANY_TEXT)
def test_call_json_is_always_valid_json(encoding: str, result: mt.CallToolResult | None, why: str) -> None:
    stream = _stream(encoding)
    print_json(stream, result_json(result, why))
    document = json.loads(_printed(stream))
    assert isinstance(document["content"], list) and isinstance(document["isError"], bool)
    if result is not None:
        assert len(document["content"]) == len(result.content)
        text = _stream(encoding)
        write(text, result_text(result))  # the readable form never fails either
        assert _printed(text)


TOOLS = st.lists(
    st.builds(
        lambda name, schema, description, title: PublishedTool(
            name=name,
            peer="p",
            tool=name,
            description=description or "",
            parameters={},
            input_schema=schema,
            origin=(description, title),
        ),
        st.text(alphabet="abcdefgh_", min_size=1, max_size=10),
        st.dictionaries(ANY_TEXT, ANY_JSON, max_size=4),
        st.none() | ANY_TEXT,
        st.none() | ANY_TEXT,
    ),
    max_size=4,
)


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
@settings(max_examples=200, deadline=None)
@given(tools=TOOLS, failed=st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=2))
def test_tools_json_is_always_valid_json(
    encoding: str, tools: list[PublishedTool], failed: dict[str, str]
) -> None:
    stream = _stream(encoding)
    print_json(stream, tools_document(tools, {"p": len(tools)}, failed))
    document = json.loads(_printed(stream))
    assert [tool["name"] for tool in document["tools"]] == [tool.name for tool in tools]
    assert [tool["signature"] for tool in document["tools"]] == [
        signature(t.name, t.input_schema) for t in tools
    ]
    assert len(document["peers"]) == 1 + len(failed)


def _tool(name: str, schema: dict[str, Any], description: str) -> PublishedTool:
    return PublishedTool(
        name=name,
        peer="p",
        tool=name,
        description=description,
        parameters={},
        input_schema=schema,
        origin=(description, None),
    )


def test_the_table_fits_a_terminal_and_keeps_every_tool_on_one_line_in_a_pipe() -> None:
    short = _tool("p__a", {"properties": {"x": {"type": "integer"}}, "required": ["x"]}, "Short.\nMore.")
    params = {f"parameter_{i}": {"type": "string"} for i in range(6)}
    long = _tool("p__long", {"properties": params}, "A description " * 20)
    rows = tools_table([short, long], 80)
    assert rows[0] == f"{'p__a(x: int)':<40}  Short."  # the first column takes at most half the width
    assert rows[1].startswith("p__long(parameter_0?: str, ") and len(rows) == 3
    assert rows[2].startswith(" " * 42 + "A description") and rows[2].endswith("…") and len(rows[2]) <= 80
    piped = tools_table([short, long], None)
    assert len(piped) == 2 and piped[1].endswith("A description")  # uncut, one line per tool


@settings(max_examples=300, deadline=None)
@given(argv=st.lists(ANY_TEXT, max_size=5), host=ANY_TEXT, path=ANY_TEXT)
def test_a_peer_id_derived_from_any_command_or_url_is_a_legal_short_name(
    argv: list[str], host: str, path: str
) -> None:
    for peer in (command_id(argv), url_id(f"https://{host}/{path}"), url_id(host)):
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}", peer) or peer == "server", peer
        check_peer_id(peer)


@settings(max_examples=200, deadline=None)
@given(tools=TOOLS, width=st.integers(min_value=40, max_value=200))
def test_on_a_terminal_every_description_fits_its_width(tools: list[PublishedTool], width: int) -> None:
    rows = tools_table(tools, width)
    signatures = {signature(tool.name, tool.input_schema) for tool in tools}
    for row in rows:
        assert len(row.splitlines()) == 1
        assert row in signatures or len(row) <= width  # a signature alone may be wider, nothing else
    piped = tools_table(tools, None)
    assert len(piped) == len(tools)
