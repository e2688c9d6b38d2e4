"""Loading images for remote models: open, shrink to a maximum side, encode as a base64 data URL.

Remote VLM endpoints take images inline as ``data:image/...;base64,...`` URLs. Sending full-size photos
wastes bandwidth and tokens, and providers downscale them anyway, so images are resized (keeping the aspect
ratio) so that the longer side is at most ``max_side`` pixels before encoding. Encodings are memoised per
(file content, size, format) because a benchmark asks many questions about the same image.
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

#: Longest side, in pixels, of images sent to remote models unless a backend is told otherwise.
DEFAULT_MAX_SIDE = 768

_FORMATS = {"jpeg": "JPEG", "jpg": "JPEG", "png": "PNG", "webp": "WEBP"}
_MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}


class ImageError(ValueError):
    """An image that cannot be read or encoded; the message names the file."""


def file_digest(path: str | Path) -> str:
    """SHA-256 of the file's bytes: identifies an image by content, whatever its path."""
    if not Path(path).is_file():
        raise ImageError(f"image not found: {str(path)!r}")
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ImageError(f"cannot read image {str(path)!r}: {error.strerror or error}") from error
    return hashlib.sha256(data).hexdigest()


def load_image(path: str | Path) -> Image:
    """Open an image as RGB; raises :class:`ImageError` naming the file when it is missing or unreadable."""
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    file = Path(path)
    if not file.is_file():
        raise ImageError(f"image not found: {str(file)!r}")
    try:
        with PILImage.open(file) as opened:
            image = opened.convert("RGB")
    except (UnidentifiedImageError, OSError) as error:
        raise ImageError(f"cannot decode image {str(file)!r}: {error}") from error
    return image


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


def _normalise_format(image_format: str) -> str:
    key = image_format.lower().lstrip(".")
    if key not in _FORMATS:
        raise ImageError(f"unsupported image format {image_format!r}; choose one of: jpeg, png, webp")
    return _FORMATS[key]


def encode_image(image: Image, image_format: str = "jpeg", quality: int = 90) -> bytes:
    """The image's bytes in ``image_format``."""
    fmt = _normalise_format(image_format)
    buffer = io.BytesIO()
    if fmt == "JPEG":
        image.save(buffer, format=fmt, quality=quality)
    else:
        image.save(buffer, format=fmt)
    return buffer.getvalue()


class _Memo:
    """A small thread-safe LRU of encoded data URLs (a few hundred images at most are in flight)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, int | None, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int | None, str]) -> str | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: tuple[str, int | None, str], value: str) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_memo = _Memo()


def image_data_url(
    path: str | Path, *, max_side: int | None = DEFAULT_MAX_SIDE, image_format: str = "jpeg"
) -> str:
    """The image at ``path``, shrunk to ``max_side`` and encoded as a ``data:`` URL for chat APIs."""
    fmt = _normalise_format(image_format)
    key = (file_digest(path), max_side, fmt)
    cached = _memo.get(key)
    if cached is not None:
        return cached
    image = resize_to_max_side(load_image(path), max_side)
    encoded = base64.b64encode(encode_image(image, fmt)).decode("ascii")
    url = f"data:{_MIME[fmt]};base64,{encoded}"
    _memo.put(key, url)
    return url


def image_part(
    path: str | Path, *, max_side: int | None = DEFAULT_MAX_SIDE, image_format: str = "jpeg"
) -> dict[str, Any]:
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
