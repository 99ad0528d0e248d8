"""render_result: an MCP CallToolResult as the text a model reads."""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp
import mcp_types as mt
import pytest
from mcp.server.mcpserver import MCPServer

from mcpx_router import render_result
from mcpx_router.model._results import NO_OUTPUT, render_content

REPR_MARKERS = (
    "TextContent(",
    "ImageContent(",
    "AudioContent(",
    "EmbeddedResource(",
    "ResourceLink(",
    "TextResourceContents(",
    "BlobResourceContents(",
    "CallToolResult(",
    "data=",
    "mime_type=",
    "annotations=",
    "meta=",
    "type='",
)


def assert_no_repr(text: str) -> None:
    for marker in REPR_MARKERS:
        assert marker not in text, f"{marker!r} leaked into {text!r}"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def text(value: str) -> mt.TextContent:
    return mt.TextContent(type="text", text=value)


def embedded(resource: mt.TextResourceContents | mt.BlobResourceContents) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.EmbeddedResource(type="resource", resource=resource)])


# -- text ----------------------------------------------------------------------------------


def test_single_text_block() -> None:
    assert render_result(mt.CallToolResult(content=[text("hello")])) == ("hello", False)


def test_text_blocks_are_joined_in_order() -> None:
    result = mt.CallToolResult(content=[text("first"), text("second"), text("third")])
    assert render_result(result) == ("first\nsecond\nthird", False)


def test_text_is_kept_verbatim() -> None:
    body = "  indented\n\nblank line above\ttab  "
    assert render_result(mt.CallToolResult(content=[text(body)]))[0] == body


def test_empty_text_blocks_are_skipped() -> None:
    result = mt.CallToolResult(content=[text(""), text("x"), text("")])
    assert render_result(result) == ("x", False)


# -- empty ---------------------------------------------------------------------------------


def test_empty_content() -> None:
    rendered, is_error = render_result(mt.CallToolResult(content=[]))
    assert rendered == NO_OUTPUT
    assert rendered  # never an empty string: the model must see that the tool answered
    assert is_error is False


def test_empty_content_that_is_an_error() -> None:
    assert render_result(mt.CallToolResult(content=[], is_error=True)) == (NO_OUTPUT, True)


def test_only_empty_text() -> None:
    assert render_result(mt.CallToolResult(content=[text("")])) == (NO_OUTPUT, False)


# -- isError -------------------------------------------------------------------------------


@pytest.mark.parametrize("is_error", [True, False])
def test_is_error_is_flagged(is_error: bool) -> None:
    result = mt.CallToolResult(content=[text("disk full")], is_error=is_error)
    assert render_result(result) == ("disk full", is_error)


def test_is_error_from_the_wire_form() -> None:
    result = mt.CallToolResult.model_validate({"content": [{"type": "text", "text": "no"}], "isError": True})
    assert render_result(result) == ("no", True)


# -- structuredContent ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "structured",
    [
        {"temperature": 21.5, "unit": "C"},
        {"nested": {"list": [1, 2, {"x": None}]}, "ok": True},
        [1, 2, 3],
        {"text": "é ☕"},
    ],
)
def test_structured_alone_is_rendered_as_json(structured: Any) -> None:
    rendered, is_error = render_result(mt.CallToolResult(content=[], structured_content=structured))
    assert json.loads(rendered) == structured
    assert not is_error


def test_structured_json_keeps_unicode_readable() -> None:
    rendered, _ = render_result(mt.CallToolResult(content=[], structured_content={"city": "Zürich"}))
    assert rendered == '{"city": "Zürich"}'


def test_structured_added_when_no_text_carries_it() -> None:
    result = mt.CallToolResult(content=[text("Forecast ready.")], structured_content={"temp": 21})
    rendered, _ = render_result(result)
    assert rendered == 'Forecast ready.\n{"temp": 21}'


@pytest.mark.parametrize(
    ("blocks", "structured"),
    [
        pytest.param(['{"temp": 21}'], {"temp": 21}, id="compact-json"),
        pytest.param(['{\n  "temp": 21\n}'], {"temp": 21}, id="pretty-json"),
        pytest.param(['{"b": 2, "a": 1}'], {"a": 1, "b": 2}, id="other-key-order"),
        pytest.param(["Here you go:", '{"temp": 21}'], {"temp": 21}, id="one-of-several-blocks"),
        pytest.param(["3"], {"result": 3}, id="result-wrapped-int"),
        pytest.param(["hello"], {"result": "hello"}, id="result-wrapped-str"),
        pytest.param(["true"], {"result": True}, id="result-wrapped-bool"),
        pytest.param(['{"a": 1}'], {"result": {"a": 1}}, id="result-wrapped-object"),
        pytest.param(["[1, 2]"], {"result": [1, 2]}, id="result-wrapped-list"),
        pytest.param(["[1, 2]"], [1, 2], id="bare-list"),
        pytest.param(["1", "2"], {"result": [1, 2]}, id="list-one-block-per-item"),
        pytest.param(["a", "b"], {"result": ["a", "b"]}, id="str-list-one-block-per-item"),
        pytest.param(["5"], {"result": [5]}, id="one-item-list"),
        pytest.param(['{"a": 1}', '{"a": 2}'], {"result": [{"a": 1}, {"a": 2}]}, id="object-list"),
    ],
)
def test_structured_skipped_when_text_carries_it(blocks: list[str], structured: Any) -> None:
    result = mt.CallToolResult(content=[text(b) for b in blocks], structured_content=structured)
    rendered, _ = render_result(result)
    assert rendered == "\n".join(blocks)


@pytest.mark.parametrize(
    ("blocks", "structured"),
    [
        pytest.param(["4"], {"result": 3}, id="different-value"),
        pytest.param(['{"temp": 20}'], {"temp": 21}, id="different-object"),
        pytest.param(["hello"], {"greeting": "hello", "to": "you"}, id="two-keys"),
        pytest.param(["not json"], {"result": "something else"}, id="prose"),
        pytest.param(["1", "2"], {"result": [1, 2, 3]}, id="list-longer-than-blocks"),
        pytest.param(["1", "3"], {"result": [1, 2]}, id="list-items-differ"),
        pytest.param(["2", "1"], {"result": [1, 2]}, id="list-order-differs"),
    ],
)
def test_structured_kept_when_text_differs(blocks: list[str], structured: Any) -> None:
    result = mt.CallToolResult(content=[text(b) for b in blocks], structured_content=structured)
    rendered, _ = render_result(result)
    assert rendered.startswith("\n".join(blocks))
    assert rendered.endswith(json.dumps(structured, ensure_ascii=False))


# -- media and resources -------------------------------------------------------------------


def test_image_is_described_not_dumped() -> None:
    data = b64(b"\x89PNG" + b"\x00" * 2044)  # 2048 bytes
    result = mt.CallToolResult(content=[mt.ImageContent(type="image", data=data, mime_type="image/png")])
    rendered, _ = render_result(result)
    assert rendered == "[image: image/png, 2.0 KB]"
    assert data not in rendered
    assert_no_repr(rendered)


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 bytes"),
        (1, "1 bytes"),
        (5, "5 bytes"),
        (1023, "1023 bytes"),
        (1024, "1.0 KB"),
        (1536, "1.5 KB"),
        (3 * 1024 * 1024, "3.0 MB"),
    ],
)
def test_media_sizes(size: int, shown: str) -> None:
    block = mt.AudioContent(type="audio", data=b64(b"a" * size), mime_type="audio/wav")
    assert render_content(block) == f"[audio: audio/wav, {shown}]"


def test_audio_is_described() -> None:
    data = b64(b"RIFF" + b"\x01" * 96)
    result = mt.CallToolResult(content=[mt.AudioContent(type="audio", data=data, mime_type="audio/wav")])
    rendered, _ = render_result(result)
    assert rendered == "[audio: audio/wav, 100 bytes]"
    assert data not in rendered
    assert_no_repr(rendered)


def test_embedded_text_resource_shows_its_text() -> None:
    resource = mt.TextResourceContents(uri="file:///notes/todo.txt", mime_type="text/plain", text="buy milk")
    rendered, _ = render_result(embedded(resource))
    assert rendered == "[resource file:///notes/todo.txt (text/plain)]\nbuy milk"
    assert_no_repr(rendered)


def test_embedded_text_resource_without_mime() -> None:
    resource = mt.TextResourceContents(uri="mem://x", text="body")
    rendered, _ = render_result(embedded(resource))
    assert rendered == "[resource mem://x (unknown type)]\nbody"


def test_embedded_blob_resource_is_described() -> None:
    blob = b64(bytes(range(256)) * 8)  # 2048 bytes
    resource = mt.BlobResourceContents(
        uri="file:///data.bin", mime_type="application/octet-stream", blob=blob
    )
    rendered, _ = render_result(embedded(resource))
    assert rendered == "[resource file:///data.bin (application/octet-stream, 2.0 KB)]"
    assert blob not in rendered
    assert_no_repr(rendered)


def test_embedded_blob_without_mime() -> None:
    resource = mt.BlobResourceContents(uri="file:///x", blob=b64(b"abc"))
    rendered = render_content(mt.EmbeddedResource(type="resource", resource=resource))
    assert rendered == "[resource file:///x (unknown type, 3 bytes)]"


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        pytest.param(
            mt.ResourceLink(
                type="resource_link",
                name="report.pdf",
                uri="file:///reports/report.pdf",
                mime_type="application/pdf",
                size=2 * 1024 * 1024,
                description="The quarterly report.",
            ),
            "[resource link report.pdf: file:///reports/report.pdf (application/pdf, 2.0 MB)] "
            "The quarterly report.",
            id="everything",
        ),
        pytest.param(
            mt.ResourceLink(type="resource_link", name="readme", uri="file:///README"),
            "[resource link readme: file:///README]",
            id="bare",
        ),
        pytest.param(
            mt.ResourceLink(type="resource_link", name="a", uri="s3://b/a", mime_type="text/csv"),
            "[resource link a: s3://b/a (text/csv)]",
            id="mime-only",
        ),
        pytest.param(
            mt.ResourceLink(type="resource_link", name="a", uri="s3://b/a", size=10),
            "[resource link a: s3://b/a (10 bytes)]",
            id="size-only",
        ),
        pytest.param(
            mt.ResourceLink(type="resource_link", name="a", uri="s3://b/a", size=0),
            "[resource link a: s3://b/a (0 bytes)]",
            id="size-zero",
        ),
    ],
)
def test_resource_links_are_described(link: mt.ResourceLink, expected: str) -> None:
    rendered, is_error = render_result(mt.CallToolResult(content=[link]))
    assert rendered == expected
    assert not is_error
    assert_no_repr(rendered)


def test_mixed_content_in_order_and_never_a_repr() -> None:
    image = b64(b"i" * 10)
    audio = b64(b"a" * 20)
    blob = b64(b"b" * 30)
    result = mt.CallToolResult(
        content=[
            text("Here is everything."),
            mt.ImageContent(type="image", data=image, mime_type="image/jpeg"),
            mt.AudioContent(type="audio", data=audio, mime_type="audio/mpeg"),
            mt.EmbeddedResource(
                type="resource", resource=mt.TextResourceContents(uri="mem://t", mime_type="text/x", text="T")
            ),
            mt.EmbeddedResource(type="resource", resource=mt.BlobResourceContents(uri="mem://b", blob=blob)),
            mt.ResourceLink(type="resource_link", name="l", uri="mem://l"),
        ],
        structured_content={"count": 6},
        is_error=True,
    )
    rendered, is_error = render_result(result)
    assert is_error
    assert rendered.split("\n") == [
        "Here is everything.",
        "[image: image/jpeg, 10 bytes]",
        "[audio: audio/mpeg, 20 bytes]",
        "[resource mem://t (text/x)]",
        "T",
        "[resource mem://b (unknown type, 30 bytes)]",
        "[resource link l: mem://l]",
        '{"count": 6}',
    ]
    for data in (image, audio, blob):
        assert data not in rendered
    assert_no_repr(rendered)


def test_from_the_wire_form() -> None:
    """A result as a peer sends it (camelCase JSON) renders the same."""
    result = mt.CallToolResult.model_validate(
        {
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "image", "data": b64(b"xyz"), "mimeType": "image/gif"},
                {"type": "resource_link", "name": "f", "uri": "file:///f", "mimeType": "text/csv", "size": 4},
            ],
            "structuredContent": {"n": 1},
        }
    )
    rendered, _ = render_result(result)
    assert rendered.split("\n") == [
        "ok",
        "[image: image/gif, 3 bytes]",
        "[resource link f: file:///f (text/csv, 4 bytes)]",
        '{"n": 1}',
    ]
    assert_no_repr(rendered)


# -- results from a real MCPServer ---------------------------------------------------------


def _server() -> MCPServer:
    server = MCPServer("shapes")

    @server.tool()
    def as_int() -> int:
        return 42

    @server.tool()
    def as_str() -> str:
        return "forty-two"

    @server.tool()
    def as_bool() -> bool:
        return False

    @server.tool()
    def as_dict() -> dict[str, int]:
        return {"a": 1, "b": 2}

    @server.tool()
    def as_list() -> list[int]:
        return [1, 2, 3]

    @server.tool()
    def as_str_list() -> list[str]:
        return ["x", "y"]

    @server.tool()
    def as_float() -> float:
        return 2.5

    @server.tool()
    def as_dict_list() -> list[dict[str, int]]:
        return [{"a": 1}, {"a": 2}]

    @server.tool(structured_output=False)
    def unstructured() -> str:
        return "plain"

    @server.tool()
    def fails() -> str:
        raise ValueError("nope")

    return server


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("as_int", "42"),
        ("as_str", "forty-two"),
        ("as_bool", "false"),
        ("as_float", "2.5"),
        ("as_dict", '{\n  "a": 1,\n  "b": 2\n}'),
        ("as_list", "1\n2\n3"),
        ("as_str_list", "x\ny"),
        ("as_dict_list", '{\n  "a": 1\n}\n{\n  "a": 2\n}'),
    ],
)
async def test_mcpserver_results_are_not_duplicated(tool: str, expected: str) -> None:
    """MCPServer sends a return value both as text and as structuredContent (wrapped as
    {"result": value} when it is not an object); the model should read it once."""
    async with mcp.Client(_server()) as client:
        result = await client.call_tool(tool, {})
    assert result.structured_content is not None
    rendered, is_error = render_result(result)
    assert rendered == expected
    assert not is_error
    assert_no_repr(rendered)


@pytest.mark.anyio
async def test_mcpserver_unstructured_result() -> None:
    async with mcp.Client(_server()) as client:
        result = await client.call_tool("unstructured", {})
    assert result.structured_content is None
    assert render_result(result) == ("plain", False)


@pytest.mark.anyio
async def test_mcpserver_error_result() -> None:
    async with mcp.Client(_server()) as client:
        result = await client.call_tool("fails", {})
    rendered, is_error = render_result(result)
    assert is_error
    assert "fails" in rendered
    assert_no_repr(rendered)


def test_deeply_nested_json_text_does_not_break_rendering() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    result = mt.CallToolResult(content=[text(deep)], structured_content={"depth": 100_000})
    rendered, is_error = render_result(result)
    assert rendered == deep + '\n{"depth": 100000}'
    assert not is_error


def test_a_boolean_is_not_taken_for_a_number_when_looking_for_duplicates() -> None:
    # json.loads("1") == True in Python; the structured `true` is not what the text "1" says.
    result = mt.CallToolResult(
        content=[mt.TextContent(type="text", text="1")], structured_content={"result": True}
    )
    assert render_result(result) == ('1\n{"result": true}', False)
    same = mt.CallToolResult(
        content=[mt.TextContent(type="text", text="true")], structured_content={"result": True}
    )
    assert render_result(same) == ("true", False)
