"""Drawing synthetic scenes with Pillow: a few flat object kinds, each in a colour and a size.

Rendering is kept apart from layout (``halluscope.builders.synthetic``) so that the geometry that makes a
relation true is decided in one place and the pixels merely follow it. Every kind fills its bounding box
exactly (touching all four sides), so "the ball is on the box" can be checked from the boxes alone, and
:func:`object_mask` gives the pixels an object covers, so tests can check occlusion on the image itself.

Images are drawn at twice the output size and reduced with a Lanczos filter, for smooth edges; the result
is the same bytes for the same scene on the same Pillow build.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw

#: The colours objects come in, by the name the scene graph uses.
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (215, 38, 38),
    "orange": (243, 134, 18),
    "yellow": (238, 205, 25),
    "green": (40, 155, 60),
    "blue": (38, 88, 215),
    "purple": (132, 58, 182),
    "pink": (238, 118, 178),
    "brown": (128, 78, 38),
}

SKY = (226, 232, 240)
FLOOR = (236, 227, 212)
HORIZON_LINE = (205, 198, 186)

_SUPERSAMPLE = 2


@dataclass(frozen=True)
class Shape:
    """What the renderer needs of one object: its kind, fill colour name and bounding box in pixels."""

    kind: str
    colour: str
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 (x1, y1 exclusive)


def _outline(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    return (int(rgb[0] * 0.55), int(rgb[1] * 0.55), int(rgb[2] * 0.55))


def _star_points(x0: float, y0: float, x1: float, y1: float) -> list[tuple[float, float]]:
    """A five-pointed star stretched to touch all four sides of the box."""
    raw: list[tuple[float, float]] = []
    for i in range(10):
        radius = 1.0 if i % 2 == 0 else 0.42
        angle = -math.pi / 2 + i * math.pi / 5
        raw.append((radius * math.cos(angle), radius * math.sin(angle)))
    xs = [p[0] for p in raw]
    ys = [p[1] for p in raw]
    sx = (x1 - x0) / (max(xs) - min(xs))
    sy = (y1 - y0) / (max(ys) - min(ys))
    return [(x0 + (px - min(xs)) * sx, y0 + (py - min(ys)) * sy) for px, py in raw]


def _draw(draw: ImageDraw.ImageDraw, kind: str, box: tuple[float, float, float, float],
          fill: int | tuple[int, int, int], outline: int | tuple[int, int, int] | None, scale: int) -> None:
    """Draw one object of ``kind`` filling ``box`` (already scaled)."""
    x0, y0, x1, y1 = box
    # Pillow's shapes include their last pixel: draw up to x1 - 1 so the object stays inside its box.
    x1 -= 1
    y1 -= 1
    w, h = x1 - x0, y1 - y0
    line = 2 * scale if outline is not None else 0
    if kind == "ball":
        draw.ellipse((x0, y0, x1, y1), fill=fill, outline=outline, width=line)
    elif kind == "box":
        draw.rectangle((x0, y0, x1, y1), fill=fill, outline=outline, width=line)
    elif kind == "triangle":
        draw.polygon([(x0, y1), (x1, y1), ((x0 + x1) / 2, y0)], fill=fill, outline=outline, width=line)
    elif kind == "star":
        draw.polygon(_star_points(x0, y0, x1, y1), fill=fill, outline=outline, width=line)
    elif kind == "cup":
        body_right = x0 + 0.74 * w
        inset = 0.1 * w
        draw.polygon([(x0, y0), (body_right, y0), (body_right - inset, y1), (x0 + inset, y1)],
                     fill=fill, outline=outline, width=line)
        handle = (x0 + 0.58 * w, y0 + 0.18 * h, x1, y0 + 0.68 * h)
        thickness = max(2 * scale, round(0.09 * w))
        if outline is not None:
            draw.arc(handle, start=-90, end=90, fill=outline, width=thickness + 2 * line)
        draw.arc((handle[0] + line, handle[1] + line, handle[2] - line, handle[3] - line), start=-90, end=90,
                 fill=fill, width=max(1, thickness - line))
    elif kind == "ring":
        thickness = max(3 * scale, round(0.2 * w))
        if outline is not None:
            draw.ellipse((x0, y0, x1, y1), outline=outline, width=thickness)
            inner = (x0 + line, y0 + line, x1 - line, y1 - line)
            draw.ellipse(inner, outline=fill, width=thickness - 2 * line)
        else:
            draw.ellipse((x0, y0, x1, y1), outline=fill, width=thickness)
    elif kind == "bowl":
        draw.pieslice((x0, y0 - h, x1, y1), start=0, end=180, fill=fill, outline=outline, width=line)
    elif kind == "table":
        slab = max(4 * scale, round(0.2 * h))
        leg = max(4 * scale, round(0.1 * w))
        draw.rectangle((x0, y0, x1, y0 + slab), fill=fill, outline=outline, width=line)
        for left in (x0 + 0.08 * w, x1 - 0.08 * w - leg):
            draw.rectangle((left, y0 + slab - line, left + leg, y1), fill=fill, outline=outline, width=line)
        if outline is not None:  # repaint the slab's lower edge over the legs' tops
            draw.rectangle((x0 + line, y0 + line, x1 - line, y0 + slab - line), fill=fill)
    else:
        raise ValueError(f"cannot draw an object of kind {kind!r}")


def _scaled(box: tuple[int, int, int, int], scale: int) -> tuple[float, float, float, float]:
    return (box[0] * scale, box[1] * scale, box[2] * scale, box[3] * scale)


def render_image(shapes: Sequence[Shape], width: int, height: int, horizon: int) -> Image.Image:
    """The scene as an RGB image; ``shapes`` are drawn in order, so later ones cover earlier ones."""
    scale = _SUPERSAMPLE
    image = Image.new("RGB", (width * scale, height * scale), FLOOR)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width * scale, horizon * scale), fill=SKY)
    draw.line((0, horizon * scale, width * scale, horizon * scale), fill=HORIZON_LINE, width=2 * scale)
    for shape in shapes:
        rgb = COLOURS[shape.colour]
        _draw(draw, shape.kind, _scaled(shape.box, scale), fill=rgb, outline=_outline(rgb), scale=scale)
    return image.resize((width, height), Image.Resampling.LANCZOS)


def object_mask(shape: Shape, width: int, height: int) -> Image.Image:
    """The pixels ``shape`` covers (mode ``"1"``), at output size: for occlusion and visibility checks."""
    scale = _SUPERSAMPLE
    mask = Image.new("L", (width * scale, height * scale), 0)
    _draw(ImageDraw.Draw(mask), shape.kind, _scaled(shape.box, scale), fill=255, outline=255, scale=scale)
    small = mask.resize((width, height), Image.Resampling.BOX)
    return small.point(lambda v: 255 if v >= 128 else 0).convert("1")
