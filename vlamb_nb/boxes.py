"""Bounding boxes: formats, conversion to absolute xyxy, and IoU as the Ref-Adv code computes it.

Formats are named ``{abs|norm_1|norm_1000}_{xyxy|xywh}``; ``abs_xyxy`` is the canonical one.
IoU uses no "+1 pixel" convention (Ref-Adv notes §3.1).
"""

from __future__ import annotations

from collections.abc import Sequence

from vlamb_nb.errors import SettingError

Box = tuple[float, float, float, float]

SCALES = {"abs": None, "norm_1": 1.0, "norm_1000": 1000.0}
LAYOUTS = ("xyxy", "xywh")
FORMATS = tuple(f"{s}_{layout}" for s in SCALES for layout in LAYOUTS)


def _check_box(box: Sequence[float]) -> Box:
    if len(box) != 4:
        raise ValueError(f"a box has 4 numbers, got {len(box)}: {box!r}")
    try:
        return tuple(float(v) for v in box)  # type: ignore[return-value]
    except (TypeError, ValueError):
        raise ValueError(f"box values must be numbers: {box!r}") from None


def parse_format(fmt: str) -> tuple[str, str]:
    if fmt not in FORMATS:
        raise SettingError(f"unknown box format {fmt!r}; choose one of {', '.join(FORMATS)}")
    scale, layout = fmt.rsplit("_", 1)
    return scale, layout


def xywh_to_xyxy(box: Sequence[float]) -> Box:
    x, y, w, h = _check_box(box)
    return (x, y, x + w, y + h)


def xyxy_to_xywh(box: Sequence[float]) -> Box:
    x1, y1, x2, y2 = _check_box(box)
    return (x1, y1, x2 - x1, y2 - y1)


def sort_corners(box: Sequence[float]) -> Box:
    x1, y1, x2, y2 = _check_box(box)
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def clip(box: Sequence[float], width: float, height: float) -> Box:
    x1, y1, x2, y2 = _check_box(box)
    return (min(max(x1, 0.0), width), min(max(y1, 0.0), height),
            min(max(x2, 0.0), width), min(max(y2, 0.0), height))


def to_abs_xyxy(box: Sequence[float], width: float, height: float, fmt: str = "abs_xyxy", *,
                do_clip: bool = True) -> Box:
    """Convert any supported format to absolute xyxy, then sort corners and clip (official ``to_abs_xyxy``)."""
    scale, layout = parse_format(fmt)
    b = _check_box(box)
    if layout == "xywh":
        b = xywh_to_xyxy(b)
    div = SCALES[scale]
    if div is not None:
        b = (b[0] * width / div, b[1] * height / div, b[2] * width / div, b[3] * height / div)
    b = sort_corners(b)
    return clip(b, width, height) if do_clip else b


def from_abs_xyxy(box: Sequence[float], width: float, height: float, fmt: str) -> Box:
    """Inverse of :func:`to_abs_xyxy` (no clipping): express an absolute xyxy box in ``fmt``."""
    scale, layout = parse_format(fmt)
    b = _check_box(box)
    div = SCALES[scale]
    if div is not None:
        b = (b[0] / width * div, b[1] / height * div, b[2] / width * div, b[3] / height * div)
    return xyxy_to_xywh(b) if layout == "xywh" else b


def rescale(box: Sequence[float], from_size: tuple[float, float], to_size: tuple[float, float]) -> Box:
    """Map an absolute box from one image size (e.g. a processor's resized image) to another."""
    x1, y1, x2, y2 = _check_box(box)
    sx = to_size[0] / from_size[0]
    sy = to_size[1] / from_size[1]
    return (x1 * sx, y1 * sy, x2 * sx, y2 * sy)


def area(box: Sequence[float]) -> float:
    x1, y1, x2, y2 = _check_box(box)
    return max(0.0, x2 - x1) * max(0.0, y2 - y1)


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two xyxy boxes, exactly as the official Ref-Adv code."""
    ax1, ay1, ax2, ay2 = _check_box(a)
    bx1, by1, bx2, by2 = _check_box(b)
    iw = min(ax2, bx2) - max(ax1, bx1)
    ih = min(ay2, by2) - max(ay1, by1)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def center(box: Sequence[float]) -> tuple[float, float]:
    x1, y1, x2, y2 = _check_box(box)
    return ((x1 + x2) / 2.0, (y1 + y2) / 2.0)
