"""Rich tool results as the model receives them, through the real `openai` SDK.

With media="attach", Chat conversations get the images (and wav/mp3 audio) tools returned in one
user message after the tool messages; Responses conversations get them inside the
`function_call_output`. Embedded resources, resource links and structured content are rendered as
text, very long outputs are cut with a marker, and what the API cannot read stays described.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp_types as mt
import pytest
from mcp import Client

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.loop import LoopResult

from ..support import _servers
from ..support._model_peers import PNG_B64, WAV_B64, RecordingPeer, connected, media_peer
from ..support._openai_replay import (
    one_turn,
)

pytestmark = pytest.mark.anyio

SAFETY = 20.0
PNG_URL = f"data:image/png;base64,{PNG_B64}"
CALLS = [
    ("c_snap", "media__snapshot", '{"camera": "door"}'),
    ("c_audio", "media__recording", ""),
    ("c_report", "media__report", ""),
    ("c_weather", "media__weather", '{"station": "oslo"}'),
]
REPORT_TEXT = (
    "[resource file:///reports/summary.md (text/markdown)]\n# Summary\nAll green.\n"
    "[resource file:///reports/data.pdf (application/pdf, 70 bytes)]\n"
    "[resource link full-report: https://example.com/reports/full (text/html)] The full report."
)


async def converse(
    api: str, adapter: OpenAIPeerToolAdapter, calls: list[tuple[str, str, str]]
) -> tuple[LoopResult, dict[str, Any]]:
    """One turn of calls and a final answer; returns the result and the second request's body."""
    result, bodies = await one_turn(api, adapter, calls, prompt="what do the cameras see?", safety=SAFETY)
    return result, bodies[1]


async def test_chat_attach_shows_media_in_one_user_message_after_the_tool_messages() -> None:
    async with connected(media=media_peer()) as c, OpenAIPeerToolAdapter(media="attach") as adapter:
        await adapter.add_peer("media", c["media"])
        result, second = await converse("chat", adapter, CALLS)
    messages = second["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "tool", "tool", "user"]
    tools = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tools == {
        "c_snap": "Picture from door:\n[image: image/png, 70 bytes]",
        "c_audio": "[audio: audio/wav, 44 bytes]",
        "c_report": REPORT_TEXT,
        "c_weather": '{\n  "station": "oslo",\n  "celsius": 21.5\n}',
    }
    assert messages[-1]["content"] == [
        {"type": "text", "text": "Media returned by media__snapshot (tool call c_snap):"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
        {"type": "text", "text": "Media returned by media__recording (tool call c_audio):"},
        {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
    ]
    assert result.messages[-1] == {"role": "assistant", "content": "done"}


async def test_chat_describe_sends_text_only() -> None:
    async with connected(media=media_peer()) as c, OpenAIPeerToolAdapter(media="describe") as adapter:
        await adapter.add_peer("media", c["media"])
        _, second = await converse("chat", adapter, CALLS)
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "tool", "tool", "tool"]
    assert base64.b64encode(base64.b64decode(PNG_B64)).decode() not in json.dumps(second)


async def test_responses_attach_carries_media_inside_the_function_call_output() -> None:
    async with connected(media=media_peer()) as c, OpenAIPeerToolAdapter(media="attach") as adapter:
        await adapter.add_peer("media", c["media"])
        _, second = await converse("responses", adapter, CALLS)
    outputs = {i["call_id"]: i["output"] for i in second["input"] if i.get("type") == "function_call_output"}
    assert outputs["c_snap"] == [
        {"type": "input_text", "text": "Picture from door:"},
        {"type": "input_image", "image_url": PNG_URL},
    ]
    # input_file does not read audio: it stays described rather than failing the request.
    assert outputs["c_audio"] == "[audio: audio/wav, 44 bytes]"
    assert outputs["c_report"] == [
        {
            "type": "input_text",
            "text": "[resource file:///reports/summary.md (text/markdown)]\n# Summary\nAll green.",
        },
        {"type": "input_file", "filename": "data.pdf", "file_data": f"data:application/pdf;base64,{PNG_B64}"},
        {
            "type": "input_text",
            "text": REPORT_TEXT.splitlines()[-1],
        },
    ]
    assert outputs["c_weather"] == '{\n  "station": "oslo",\n  "celsius": 21.5\n}'
    assert not any(i.get("role") == "user" for i in second["input"][1:])  # no follow-up message


def results_peer() -> RecordingPeer:
    """Results an MCPServer would not produce: unreadable media, failures with a picture, summaries."""

    def answer(result: mt.CallToolResult) -> Any:
        async def handler(arguments: dict[str, Any]) -> mt.CallToolResult:
            return result

        return handler

    svg = mt.ImageContent(type="image", data=base64.b64encode(b"<svg/>").decode(), mime_type="image/svg+xml")
    gzip = mt.EmbeddedResource(
        type="resource",
        resource=mt.BlobResourceContents(uri="file:///x.gz", mime_type="application/gzip", blob="H4sI"),
    )
    shot = mt.ImageContent(type="image", data=PNG_B64, mime_type="image/png")
    summary = mt.TextContent(type="text", text="Oslo: mild.")
    nothing: dict[str, Any] = {"type": "object", "properties": {}}
    return (
        RecordingPeer("odd")
        .tool("vector", nothing, answer(mt.CallToolResult(content=[svg, gzip])))
        .tool("crash", nothing, answer(mt.CallToolResult(content=[shot], is_error=True)))
        .tool(
            "summary",
            nothing,
            answer(mt.CallToolResult(content=[summary], structured_content={"city": "Oslo", "celsius": 12})),
        )
    )


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_what_the_api_cannot_read_stays_described_and_failures_say_so(api: str) -> None:
    calls = [
        ("c_vector", "odd__vector", ""),
        ("c_crash", "odd__crash", ""),
        ("c_summary", "odd__summary", ""),
    ]
    async with connected(odd=results_peer()) as c, OpenAIPeerToolAdapter(media="attach") as adapter:
        await adapter.add_peer("odd", c["odd"])
        _, second = await converse(api, adapter, calls)
    items = second["messages" if api == "chat" else "input"]
    answers = {
        i.get("tool_call_id", i.get("call_id")): i.get("content", i.get("output"))
        for i in items
        if i.get("role") == "tool" or i.get("type") == "function_call_output"
    }
    vector = "[image: image/svg+xml, 6 bytes]\n[resource file:///x.gz (application/gzip, 3 bytes)]"
    assert answers["c_vector"] == vector
    assert answers["c_summary"] == 'Oslo: mild.\n{"city": "Oslo", "celsius": 12}'
    if api == "chat":
        assert answers["c_crash"] == "Error: odd__crash reported a failure: [image: image/png, 70 bytes]"
        follow_up = items[-1]
        assert follow_up["role"] == "user"
        assert follow_up["content"] == [
            {"type": "text", "text": "Media returned by odd__crash (tool call c_crash):"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
        ]
    else:
        assert answers["c_crash"] == [
            {"type": "input_text", "text": "Error: odd__crash reported a failure:"},
            {"type": "input_image", "image_url": PNG_URL},
        ]


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_very_large_outputs_are_cut_with_a_clear_marker(api: str) -> None:
    server = media_peer(long_text_chars=50_000)
    async with connected(media=server) as c, OpenAIPeerToolAdapter(max_output_chars=2_000) as adapter:
        await adapter.add_peer("media", c["media"])
        _, second = await converse(api, adapter, [("c_dump", "media__dump", "")])
    items = second["messages" if api == "chat" else "input"]
    text = next(i.get("content", i.get("output")) for i in items if i.get("role") == "tool" or "output" in i)
    marker = "\n[… output truncated: 48000 of 50000 characters omitted …]\n"
    assert marker in text
    head, tail = text.split(marker)
    assert (len(head), len(tail)) == (1_600, 400)
    assert head.startswith("line 000000\nline 000001\n")
    full = "".join(f"line {i:06d}\n" for i in range(50_000 // 12 + 1))[:50_000]
    assert full.startswith(head) and full.endswith(tail)


# -- server-everything -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed() -> None:
    _servers.install_everything()


@pytest.mark.thirdparty
@pytest.mark.timeout(600, func_only=True)
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_server_everything_results_reach_the_model(installed: None, api: str) -> None:
    calls = [
        ("c_image", "everything__get-tiny-image", ""),
        ("c_links", "everything__get-resource-links", '{"count": 2}'),
        ("c_blob", "everything__get-resource-reference", '{"resourceType": "Blob", "resourceId": 2}'),
        ("c_text", "everything__get-resource-reference", '{"resourceType": "Text", "resourceId": 1}'),
        ("c_structured", "everything__get-structured-content", '{"location": "Chicago"}'),
    ]
    async with (
        Client(_servers.everything_stdio_params()) as client,
        OpenAIPeerToolAdapter(media="attach", call_timeout=SAFETY) as adapter,
    ):
        await adapter.add_peer("everything", client)
        _, second = await converse(api, adapter, calls)
    items = second["messages" if api == "chat" else "input"]
    answers = {
        i.get("tool_call_id", i.get("call_id")): i.get("content", i.get("output"))
        for i in items
        if i.get("role") == "tool" or i.get("type") == "function_call_output"
    }
    assert len(answers) == len(calls)
    assert not any(isinstance(a, str) and a.startswith("Error:") for a in answers.values()), answers
    links = answers["c_links"]
    assert links.count("[resource link ") == 2 and "demo://resource/dynamic/" in links
    assert "[resource demo://resource/" in answers["c_text"] and "text/plain" in answers["c_text"]
    blob = answers["c_blob"]
    if api == "chat":  # a blob is described in a Chat tool message, never dumped
        assert "[resource demo://resource/dynamic/blob/2 (text/plain, " in blob
    else:  # a Responses input_file reads text files
        assert blob[1]["type"] == "input_file" and blob[1]["filename"] == "2.txt"
        assert blob[1]["file_data"].startswith("data:text/plain;base64,")
    structured = json.loads(answers["c_structured"].splitlines()[-1])
    assert set(structured) == {"temperature", "conditions", "humidity"}
    if api == "chat":
        image_text = answers["c_image"]
        assert "[image: image/png," in image_text
        follow_up = items[-1]
        assert follow_up["role"] == "user"
        parts = follow_up["content"]
        assert parts[0] == {
            "type": "text",
            "text": "Media returned by everything__get-tiny-image (tool call c_image):",
        }
        assert [p["type"] for p in parts] == ["text", "image_url"]
        url = parts[1]["image_url"]["url"]
    else:
        parts = answers["c_image"]
        assert [p["type"] for p in parts] == ["input_text", "input_image", "input_text"]
        url = parts[1]["image_url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.removeprefix("data:image/png;base64,")).startswith(b"\x89PNG")
