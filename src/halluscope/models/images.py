"""Images for remote models: the file's own bytes as a base64 data URL, re-encoded only when asked or needed.

Remote VLM endpoints take images inline as ``data:image/...;base64,...`` URLs. A benchmark's photo is sent
as the benchmark holds it: the file's bytes, with the MIME type of its real format (read from its first
bytes, not its extension), whenever that format is one chat endpoints accept (JPEG, PNG, WEBP, GIF). This is
what other harnesses send by default, and a shrunk, re-compressed photo is another test: a chart's small
print stops being legible, JPEG artefacts appear where the original had none.

The image is decoded and re-encoded only when the caller asks for it: ``max_side`` (shrink so the longer
side is at most that many pixels, aspect kept, never enlarged; an image already that small is still sent
as stored) or an explicit ``image_format``; or when the file's format is one endpoints do not take (BMP,
TIFF, ...), which is converted to PNG, losslessly. Encodings are memoised per (file content, size, format)
because a benchmark asks many questions about the same image.
"""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Pillow is a core dependency, but imported lazily to keep `import halluscope` fast
    from PIL.Image import Image

#: ``image_format`` that keeps the file's own format where endpoints accept it (the default).
AUTO = "auto"
#: The formats chat endpoints accept inline, by Pillow's name, with their MIME type.
ACCEPTED = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}
#: What a format endpoints do not accept is converted to when no format is asked for (lossless).
FALLBACK_FORMAT = "PNG"

_FORMATS = {"jpeg": "JPEG", "jpg": "JPEG", "png": "PNG", "webp": "WEBP"}
#: Formats a re-encoded image may be written in (GIF only ever goes out as stored).
_WRITABLE = ("JPEG", "PNG", "WEBP")
_QUALITY = 90

Memo = tuple[str, int | None, str]


class ImageError(ValueError):
    """An image that cannot be read or encoded; the message names the file."""


def _read(path: str | Path) -> bytes:
    file = Path(path)
    if not file.is_file():
        raise ImageError(f"image not found: {str(path)!r}")
    try:
        return file.read_bytes()
    except OSError as error:
        raise ImageError(f"cannot read image {str(path)!r}: {error.strerror or error}") from error


def file_digest(path: str | Path) -> str:
    """SHA-256 of the file's bytes: identifies an image by content, whatever its path."""
    return hashlib.sha256(_read(path)).hexdigest()


def stored_format(data: bytes) -> str | None:
    """The format of an image file by its first bytes (``JPEG``, ``PNG``, ``WEBP``, ``GIF``), or None for
    any other content: a ``.jpg`` that holds a PNG is a PNG."""
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def load_image(path: str | Path) -> Image:
    """Open an image as RGB; raises :class:`ImageError` naming the file when it is missing or unreadable."""
    return _decode(_read(path), path)


def _decode(data: bytes, path: str | Path) -> Image:
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with PILImage.open(io.BytesIO(data)) as opened:
            image = opened.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as error:
        raise ImageError(f"cannot decode image {str(path)!r}: {error}") from error
    return image


def _size(data: bytes, path: str | Path) -> tuple[int, int]:
    """Width and height from the file's header (nothing decoded): a file that is not an image fails here,
    before anything is sent."""
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with PILImage.open(io.BytesIO(data)) as opened:
            return opened.size
    except (UnidentifiedImageError, OSError, ValueError) as error:
        raise ImageError(f"cannot decode image {str(path)!r}: {error}") from error


def resize_to_max_side(image: Image, max_side: int | None) -> Image:
    """Shrink so that the longer side is at most ``max_side`` (aspect ratio kept); never enlarges."""
    if max_side is None or max_side <= 0:
        return image
    width, height = image.size
    longest = max(width, height)
    if longest <= max_side:
        return image
    scale = max_side / longest
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    from PIL import Image as PILImage

    return image.resize(size, PILImage.Resampling.LANCZOS)


def check_image_format(image_format: str) -> str:
    """The ``image_format`` option, checked: ``auto`` (keep the file's format), ``jpeg``, ``png``, ``webp``."""
    key = str(image_format).lower().lstrip(".")
    if key == AUTO:
        return AUTO
    if key not in _FORMATS:
        raise ImageError(f"unsupported image format {image_format!r}; choose one of: auto, jpeg, png, webp")
    return _FORMATS[key]


def encode_image(image: Image, image_format: str = "jpeg", quality: int = _QUALITY) -> bytes:
    """The image's bytes in ``image_format``."""
    fmt = check_image_format(image_format)
    fmt = FALLBACK_FORMAT if fmt == AUTO else fmt
    buffer = io.BytesIO()
    if fmt in ("JPEG", "WEBP"):
        image.save(buffer, format=fmt, quality=quality)
    else:
        image.save(buffer, format=fmt)
    return buffer.getvalue()


def sending_mode(max_side: int | None, image_format: str = AUTO) -> dict[str, Any]:
    """How images are sent, as a model's identity (``spec.json``) records it: ``images: "as stored"``, or
    what is done to them (``max_side``, ``image_format``)."""
    fmt = check_image_format(image_format)
    if not max_side and fmt == AUTO:
        return {"images": "as stored"}
    mode: dict[str, Any] = {"images": "re-encoded"}
    if max_side:
        mode["max_side"] = int(max_side)
    if fmt != AUTO:
        mode["image_format"] = fmt.lower()
    return mode


class _Memo:
    """A small thread-safe LRU of encoded data URLs (a few hundred images at most are in flight)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[Memo, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Memo) -> str | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Memo, value: str) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_memo = _Memo()


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_data_url(path: str | Path, *, max_side: int | None = None, image_format: str = AUTO) -> str:
    """The image at ``path`` as a ``data:`` URL for chat APIs: its own bytes when its format is accepted and
    neither a smaller size nor another format is asked for, else decoded, shrunk and re-encoded."""
    fmt = check_image_format(image_format)
    limit = int(max_side) if max_side and int(max_side) > 0 else None
    data = _read(path)
    key = (hashlib.sha256(data).hexdigest(), limit, fmt)
    cached = _memo.get(key)
    if cached is not None:
        return cached
    stored = stored_format(data)
    if stored in ACCEPTED and fmt in (AUTO, stored):
        size = _size(data, path)  # a file that only starts like an image is refused here, not by the endpoint
        if limit is None or max(size) <= limit:
            url = _data_url(ACCEPTED[str(stored)], data)
            _memo.put(key, url)
            return url
    target = fmt if fmt != AUTO else (stored if stored in _WRITABLE else FALLBACK_FORMAT)
    image = resize_to_max_side(_decode(data, path), limit)
    url = _data_url(ACCEPTED[str(target)], encode_image(image, str(target)))
    _memo.put(key, url)
    return url


def image_part(path: str | Path, *, max_side: int | None = None, image_format: str = AUTO) -> dict[str, Any]:
    """The image as an OpenAI chat ``image_url`` content part (a model's question, a VLM judge's prompt)."""
    url = image_data_url(path, max_side=max_side, image_format=image_format)
    return {"type": "image_url", "image_url": {"url": url}}


def decode_data_url(url: str) -> tuple[str, bytes]:
    """The MIME type and bytes of a ``data:`` URL (the inverse of :func:`image_data_url`; used in tests and
    by scripted servers)."""
    if not url.startswith("data:") or ";base64," not in url:
        raise ImageError(f"not a base64 data URL: {url[:40]!r}")
    header, _, payload = url.partition(";base64,")
    try:
        return header[len("data:") :], base64.b64decode(payload, validate=True)
    except ValueError as error:
        raise ImageError(f"invalid base64 in data URL: {error}") from error
