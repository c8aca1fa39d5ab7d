"""Images inside tool results, found in a tool message's text for the adapters to send natively.

A tool's content reaches the adapters as text (``loop.tool_message``: canonical
JSON for anything but a string). An MCP result with an image block
(``agentloop.mcp.client.result_value``: ``{"content": [{"type": "image",
"data": BASE64, "mimeType": "image/png"}, ...], "structuredContent": ...}``)
would otherwise reach the model as base64 inside JSON text. ``tool_parts``
recognises exactly that shape and splits it into text and images; the
Anthropic adapter sends the images as ``image`` blocks inside the
``tool_result``, the OpenAI one (whose tool messages take only text) in a user
message right after the turn's tool messages.

Rules:

1. Only an object whose keys are ``content`` (a non-empty list of typed
   blocks) and optionally ``structuredContent``, holding at least one image
   block with a supported media type and valid base64 data, is split. Any
   other text goes to the model unchanged.
2. Images of other media types (``image/svg+xml``...) and blocks that are not
   text or images (audio, resources) stay as their JSON text, in order.
3. The transcript is not touched: this happens only when a request is built,
   so replay and hashes see the same text as before.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["IMAGE_MEDIA_TYPES", "Image", "tool_parts"]

IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""What both vendors accept as base64 image input."""


@dataclass(frozen=True)
class Image:
    media_type: str
    data: str
    """Base64, as the tool sent it."""

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


def _image(block: dict[str, Any]) -> Image | None:
    if block.get("type") != "image":
        return None
    mt, data = block.get("mimeType"), block.get("data")
    if not isinstance(mt, str) or mt.lower() not in IMAGE_MEDIA_TYPES or not isinstance(data, str) or not data:
        return None
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return Image(mt.lower(), data)


def _dump(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


def tool_parts(text: str) -> list[str | Image] | None:
    """The text and images of an MCP result with images, in order; None for any other text (rule 1)."""
    if not text.startswith('{"content":['):  # canonical JSON sorts keys: "content" comes first
        return None
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or set(obj) - {"content", "structuredContent"}:
        return None
    blocks = obj["content"]
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks):
        return None
    images = [_image(b) for b in blocks]
    if not any(images):
        return None
    parts: list[str | Image] = []
    for b, img in zip(blocks, images):
        if img is not None:
            parts.append(img)
        elif b["type"] == "text" and isinstance(b.get("text"), str):
            if b["text"]:
                parts.append(b["text"])
        else:
            parts.append(_dump(b))
    if "structuredContent" in obj:
        parts.append(_dump({"structuredContent": obj["structuredContent"]}))
    return parts
