"""Image inputs: one validated form for a question's image, whatever the caller gave.

A question may come with an image as a file path, an http(s) URL, a `data:` URL or raw bytes.
Local images are read and checked once here (readable, a real image, within the size bounds), so
that a bad file is a clear `ImageError` before any model runs, never a stack trace from a backend.
Remote URLs are passed to the model as they are: mia never downloads them (a vision API fetches
them itself), and only their form is checked.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest image accepted (OpenAI's limit per image is 20 MB; larger is refused, not resized)."""
MAX_IMAGE_SIDE = 8192
"""The largest width or height in pixels (Anthropic and OpenAI refuse larger images)."""
FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


class ImageError(ValueError):
    """An image input that cannot be used (unreadable, not an image, too large); one line."""


@dataclass(frozen=True)
class ImageInput:
    """A checked image: inline bytes with their MIME type, or a remote URL left to the model."""

    data: bytes = b""
    mime_type: str = ""
    url: str = ""
    width: int = 0
    height: int = 0
    source: str = ""

    @property
    def is_remote(self) -> bool:
        return bool(self.url)

    def data_url(self) -> str:
        """The image as a URL a chat API accepts: the remote URL, or a base64 `data:` URL."""
        if self.url:
            return self.url
        return f"data:{self.mime_type};base64,{base64.b64encode(self.data).decode('ascii')}"

    def content_block(self) -> dict[str, Any]:
        """The image as a LangChain standard content block, which each provider integration
        (OpenAI and OpenAI-compatible servers such as vLLM, Anthropic, Google) translates."""
        if self.url:
            return {"type": "image", "url": self.url}
        return {"type": "image", "base64": base64.b64encode(self.data).decode("ascii"), "mime_type": self.mime_type}


def load_image(value: Any, *, max_bytes: int = MAX_IMAGE_BYTES, max_side: int = MAX_IMAGE_SIDE) -> ImageInput:
    """Validate an image given as a path, an http(s) or data URL, bytes, or an ImageInput."""
    if isinstance(value, ImageInput):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return _from_bytes(bytes(value), "bytes", max_bytes, max_side)
    if isinstance(value, Path):
        return _from_path(value, max_bytes, max_side)
    if not isinstance(value, str) or not value.strip():
        raise ImageError(f"an image must be a path, an http(s) or data URL, or bytes; got {type(value).__name__}")
    text = value.strip()
    if text.startswith("data:"):
        return _from_data_url(text, max_bytes, max_side)
    parsed = urlparse(text)
    if parsed.scheme in ("http", "https"):
        if not parsed.netloc:
            raise ImageError(f"image URL has no host: {text[:80]}")
        return ImageInput(url=text, source=text)
    if parsed.scheme and len(parsed.scheme) > 1 and parsed.scheme != "file":
        raise ImageError(f"unsupported image URL scheme {parsed.scheme!r} (use a path, http(s) or data URL)")
    return _from_path(Path(parsed.path if parsed.scheme == "file" else text).expanduser(), max_bytes, max_side)


def _from_path(path: Path, max_bytes: int, max_side: int) -> ImageInput:
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ImageError(f"cannot read image {path}: {err.strerror or err}") from None
    if not path.is_file():
        raise ImageError(f"image {path} is not a file")
    if size > max_bytes:
        raise ImageError(f"image {path} is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ImageError(f"cannot read image {path}: {err.strerror or err}") from None
    return _from_bytes(data, str(path), max_bytes, max_side)


def _from_data_url(text: str, max_bytes: int, max_side: int) -> ImageInput:
    header, _, payload = text.partition(",")
    if ";base64" not in header:
        raise ImageError("a data URL image must be base64-encoded (data:image/png;base64,...)")
    if len(payload) * 3 // 4 > max_bytes:
        raise ImageError(f"data URL image is over the {max_bytes / 1e6:.0f} MB limit")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("data URL image is not valid base64") from None
    return _from_bytes(data, "data URL", max_bytes, max_side)


def _from_bytes(data: bytes, source: str, max_bytes: int, max_side: int) -> ImageInput:
    if not data:
        raise ImageError(f"image from {source} is empty")
    if len(data) > max_bytes:
        raise ImageError(f"image from {source} is {len(data) / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit")
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            fmt, (width, height) = img.format, img.size
            if fmt not in FORMATS:
                raise ImageError(f"image from {source} is {fmt}; supported: {', '.join(sorted(FORMATS))}")
            if max(width, height) > max_side:
                raise ImageError(f"image from {source} is {width}x{height} px, over the {max_side} px limit per side")
            img.load()  # decodes the pixels: a truncated or corrupt file fails here, not in a model server
    except ImageError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as err:
        reason = " ".join(f"{type(err).__name__}: {err}".split())
        raise ImageError(f"{source} is not a readable image ({reason})"[:300]) from None
    return ImageInput(data=data, mime_type=FORMATS[fmt], width=width, height=height, source=source)
