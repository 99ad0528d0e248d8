"""Images, audio and files from tools, in the forms each OpenAI API accepts (pure functions).

Chat Completions tool messages carry text only, so media goes to the model in one follow-up
user message with image (and wav/mp3 audio) parts. Responses `function_call_output` items carry
`input_text` / `input_image` / `input_file` parts directly.

Only what the API takes is attached: images in the formats OpenAI reads (PNG, JPEG, GIF, WebP),
and in Responses files of the document types `input_file` reads. Anything else stays described
in the text, because one part the API refuses fails the whole request.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from typing import Any

import mcp_types as mt

from ._results import render_content, truncate

__all__ = ["chat_media_message", "has_media", "responses_output"]

_IMAGE_TYPES = {
    "image/png": "image/png",
    "image/jpeg": "image/jpeg",
    "image/jpg": "image/jpeg",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
}
"""The image types OpenAI reads, each with the name it takes."""
_FILE_TYPES = frozenset(
    {
        "application/pdf",
        "application/json",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint",
        "application/rtf",
    }
)
"""Document types a Responses `input_file` reads (besides text/* and the OpenXML office formats)."""
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def _blob(block: Any) -> mt.BlobResourceContents | None:
    if isinstance(block, mt.EmbeddedResource) and isinstance(block.resource, mt.BlobResourceContents):
        return block.resource
    return None


def _image_url(block: Any) -> str | None:
    """A data URL for an image block, or a blob resource holding an image, that OpenAI reads."""
    blob = _blob(block)
    mime = blob.mime_type if blob is not None else getattr(block, "mime_type", None)
    shown = _IMAGE_TYPES.get((mime or "").lower())
    if shown is None or not (blob is not None or isinstance(block, mt.ImageContent)):
        return None
    return f"data:{shown};base64,{blob.blob if blob is not None else block.data}"


def _is_document(mime: str | None) -> bool:
    kind = (mime or "").lower()
    return (
        kind in _FILE_TYPES
        or kind.startswith("text/")
        or kind.startswith("application/vnd.openxmlformats-officedocument.")
    )


def _chat_audio(block: Any) -> dict[str, Any] | None:
    if isinstance(block, mt.AudioContent) and block.mime_type.lower() in _AUDIO_FORMATS:
        return {"data": block.data, "format": _AUDIO_FORMATS[block.mime_type.lower()]}
    return None


def _filename(blob: mt.BlobResourceContents) -> str:
    """The last part of the resource's URI, with an extension for its type if it has none."""
    name = blob.uri.rstrip("/").rsplit("/", 1)[-1] or "resource"
    if "." not in name:
        name += mimetypes.guess_extension(blob.mime_type or "") or ""
    return name


def has_media(result: mt.CallToolResult | None) -> bool:
    """Whether a result holds images, audio or files one of the APIs can show the model."""
    if result is None:
        return False
    return any(
        _image_url(b) is not None
        or _chat_audio(b) is not None
        or ((blob := _blob(b)) is not None and _is_document(blob.mime_type))
        for b in result.content
    )


def responses_output(
    result: mt.CallToolResult, text: str, *, limit: int | None, heading: str | None = None
) -> str | list[dict[str, Any]]:
    """A Responses `function_call_output.output`: plain text, or parts when the result has media.

    Args:
        result: The peer's result.
        text: The rendered text of the result, used as is when nothing can be attached.
        limit: Each text part is cut to about this many characters.
        heading: A first text part; by default, for a result the peer marked as an error, one
            saying so.
    """
    parts: list[dict[str, Any]] = []
    attached = False
    for block in result.content:
        blob, url = _blob(block), _image_url(block)
        if url is not None:
            parts.append({"type": "input_image", "image_url": url})
        elif blob is not None and _is_document(blob.mime_type):
            data = f"data:{blob.mime_type};base64,{blob.blob}"
            parts.append({"type": "input_file", "filename": _filename(blob), "file_data": data})
        else:
            parts.append({"type": "input_text", "text": truncate(render_content(block), limit)})
            continue
        attached = True
    if not attached:
        return text
    if result.structured_content is not None and not any(p["type"] == "input_text" for p in parts):
        parts.append({"type": "input_text", "text": truncate(text, limit)})
    if heading is None and result.is_error:
        heading = "Error: the tool reported a failure:"
    if heading:
        parts.insert(0, {"type": "input_text", "text": heading})
    return parts


def chat_media_message(media: Sequence[tuple[str, str, mt.CallToolResult]]) -> dict[str, Any] | None:
    """One user message showing the images (and wav/mp3 audio) that tools returned.

    Args:
        media: (tool call id, public tool name, result) for each call whose result has media.
    """
    parts: list[dict[str, Any]] = []
    for call_id, name, result in media:
        shown: list[dict[str, Any]] = []
        for block in result.content:
            url, audio = _image_url(block), _chat_audio(block)
            if url is not None:
                shown.append({"type": "image_url", "image_url": {"url": url}})
            elif audio is not None:
                shown.append({"type": "input_audio", "input_audio": audio})
        if shown:
            parts.append({"type": "text", "text": f"Media returned by {name} (tool call {call_id}):"})
            parts.extend(shown)
    return {"role": "user", "content": parts} if parts else None
