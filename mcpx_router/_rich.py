"""Images, audio and files from tools, in the forms each OpenAI API accepts (pure functions).

Chat Completions tool messages carry text only, so media goes to the model in one follow-up
user message with image (and wav/mp3 audio) parts. Responses `function_call_output` items carry
`input_text` / `input_image` / `input_file` parts directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as mt

from ._results import render_content

__all__ = ["chat_media_message", "has_media", "responses_output", "truncate"]

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def truncate(text: str, limit: int | None) -> str:
    """Cut `text` to about `limit` characters, saying clearly that it was cut and by how much."""
    if limit is None or len(text) <= limit:
        return text
    marker = f"\n[… output truncated: {len(text) - limit} of {len(text)} characters omitted …]\n"
    head = max(0, (limit * 4) // 5)
    tail = max(0, limit - head)
    return text[:head] + marker + (text[-tail:] if tail else "")


def _blob(block: Any) -> mt.BlobResourceContents | None:
    if isinstance(block, mt.EmbeddedResource) and isinstance(block.resource, mt.BlobResourceContents):
        return block.resource
    return None


def has_media(result: mt.CallToolResult | None) -> bool:
    """Whether a result holds images, audio or binary resources worth showing the model."""
    if result is None:
        return False
    return any(isinstance(b, mt.ImageContent | mt.AudioContent) or _blob(b) for b in result.content)


def responses_output(
    result: mt.CallToolResult, text: str, *, limit: int | None
) -> str | list[dict[str, Any]]:
    """A Responses `function_call_output.output`: plain text, or parts when the result has media.

    `text` is the rendered text of the result (used as is when there is no media).
    """
    if not has_media(result):
        return text
    parts: list[dict[str, Any]] = []
    for block in result.content:
        blob = _blob(block)
        if isinstance(block, mt.ImageContent):
            parts.append({"type": "input_image", "image_url": f"data:{block.mime_type};base64,{block.data}"})
        elif blob is not None:
            filename = blob.uri.rstrip("/").rsplit("/", 1)[-1] or "resource"
            parts.append({"type": "input_file", "filename": filename, "file_data": _data_url(blob)})
        elif isinstance(block, mt.AudioContent):
            parts.append({"type": "input_file", "filename": "audio", "file_data": _data_url(block)})
        else:
            parts.append({"type": "input_text", "text": truncate(render_content(block), limit)})
    if result.structured_content is not None and not any(p["type"] == "input_text" for p in parts):
        parts.append({"type": "input_text", "text": truncate(text, limit)})
    return parts


def _data_url(item: mt.BlobResourceContents | mt.AudioContent) -> str:
    mime = item.mime_type or "application/octet-stream"
    data = item.blob if isinstance(item, mt.BlobResourceContents) else item.data
    return f"data:{mime};base64,{data}"


def chat_media_message(media: Sequence[tuple[str, str, mt.CallToolResult]]) -> dict[str, Any] | None:
    """One user message showing the images (and wav/mp3 audio) that tools returned.

    Args:
        media: (tool call id, public tool name, result) for each call whose result has media.
    """
    parts: list[dict[str, Any]] = []
    for call_id, name, result in media:
        shown: list[dict[str, Any]] = []
        for block in result.content:
            if isinstance(block, mt.ImageContent):
                url = f"data:{block.mime_type};base64,{block.data}"
                shown.append({"type": "image_url", "image_url": {"url": url}})
            elif isinstance(block, mt.AudioContent) and block.mime_type in _AUDIO_FORMATS:
                audio = {"data": block.data, "format": _AUDIO_FORMATS[block.mime_type]}
                shown.append({"type": "input_audio", "input_audio": audio})
        if shown:
            parts.append({"type": "text", "text": f"Media returned by {name} (tool call {call_id}):"})
            parts.extend(shown)
    return {"role": "user", "content": parts} if parts else None
