"""Ref-Adv answer parsing: an exact port of the official JSON box parser, plus per-family parsers.

The official parser (Ref-Adv ``run.py``) reads the *last* loadable fenced JSON block, else the one
unfenced JSON value that ends the reply; collects every 4-number list recursively (priority keys
first), converts each to absolute xyxy, dedupes, and the first box is scored. A reply that yields
no box gets one repair turn with :data:`FOLLOWUP_TEXT`.

Families whose native output is not JSON (InternVL ``[[..]]``/``<box>``, CogVLM ``[[..]]``, GLM box
tokens) have their own small parsers, used only when a run selects them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vlamb_nb import boxes
from vlamb_nb.errors import SettingError

# verbatim from the official configs/qwen.yaml (retry_followup_text) and run.py DEFAULT_FOLLOWUP
FOLLOWUP_TEXT = (
    "Your previous answer did not end with a valid JSON bbox output.\n"
    "Now output ONLY one complete JSON code block.\n"
    "Use this exact schema:\n"
    "```json\n"
    '{"bboxes": [[x1, y1, x2, y2]]}\n'
    "```\n"
    "Do not output any extra text."
)

FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", flags=re.S | re.I)
PRIORITY_KEYS = ("bboxes", "boxes", "bbox", "bbox_2d", "predictions", "results", "objects", "coordinates")
MAX_BOXES = 100

# parse-error codes exactly as they appear in the official prediction files
EMPTY_RESPONSE = "empty_response"
NO_BBOX_FOUND = "no_bbox_found"
BACKEND_ERROR = "backend_error"
PARSE_ERRORS = ("", EMPTY_RESPONSE, NO_BBOX_FOUND, BACKEND_ERROR)

OFFICIAL_FORMATS = ("abs_xyxy", "norm_1000_xyxy", "norm_1_xyxy")
# Family formats the official converter lacks: (the official format after reordering, the reorder).
# Gemini's documented convention is [ymin, xmin, ymax, xmax] on a 0-1000 grid (notes §1.2, inferred:
# the paper does not say how Gemini's boxes were read).
FAMILY_FORMATS: dict[str, tuple[str, tuple[int, int, int, int]]] = {
    "norm_1000_yxyx": ("norm_1000_xyxy", (1, 0, 3, 2)),
}
BOX_FORMATS = (*boxes.FORMATS, *FAMILY_FORMATS)  # every format a grounding style may declare


def load_last_json_candidate(text: str) -> Any | None:
    """Fenced blocks last to first; else the first ``[``/``{`` whose JSON value ends the text."""
    fenced = [m.group(1).strip() for m in FENCE_RE.finditer(text) if m.group(1).strip()]
    for chunk in reversed(fenced):
        try:
            return json.loads(chunk)
        except (ValueError, RecursionError):
            continue
    t = text.rstrip()
    decoder = json.JSONDecoder()
    for i, ch in enumerate(t):
        if ch not in "[{":
            continue
        try:
            obj, end = decoder.raw_decode(t[i:])
        except (ValueError, RecursionError):
            continue
        if i + end == len(t):
            return obj
    return None


def collect_boxes(obj: Any, out: list[list[float]] | None = None, *, max_boxes: int = MAX_BOXES) -> list[list[float]]:
    """Every 4-number list in ``obj``, depth first, dict priority keys before the others.

    Like the official code, ``bool`` counts as a number (it is an ``int`` in Python).
    """
    out = [] if out is None else out
    if len(out) >= max_boxes:
        return out
    if isinstance(obj, list):
        if len(obj) == 4 and all(isinstance(x, (int, float)) for x in obj):
            out.append([float(v) for v in obj])
            return out
        for it in obj:
            collect_boxes(it, out, max_boxes=max_boxes)
        return out
    if isinstance(obj, dict):
        for k in PRIORITY_KEYS:
            if k in obj:
                collect_boxes(obj[k], out, max_boxes=max_boxes)
        for k, v in obj.items():
            if k not in PRIORITY_KEYS:
                collect_boxes(v, out, max_boxes=max_boxes)
    return out


def to_abs(box: list[float], width: float, height: float, fmt: str) -> tuple[float, float, float, float]:
    """One box in any declared format (official or family) as absolute xyxy, sorted and clipped."""
    if fmt in FAMILY_FORMATS:
        base, order = FAMILY_FORMATS[fmt]
        box, fmt = [box[i] for i in order], base
    elif fmt not in boxes.FORMATS:
        raise SettingError(f"unknown box format {fmt!r}; choose one of {', '.join(BOX_FORMATS)}")
    return boxes.to_abs_xyxy(box, width, height, fmt)


def to_abs_boxes(raw: list[list[float]], width: float, height: float, fmt: str) -> list[list[float]]:
    """Convert, sort corners, clip and dedupe (coordinates rounded to 6 decimals), keeping order."""
    out: list[list[float]] = []
    seen: set[tuple[float, ...]] = set()
    for b in raw:
        bb = list(to_abs(b, width, height, fmt))
        key = tuple(round(v, 6) for v in bb)
        if key in seen:
            continue
        seen.add(key)
        out.append(bb)
    return out


def parse_json_boxes(text: str | None, width: float, height: float, fmt: str = "abs_xyxy"
                     ) -> tuple[list[list[float]], str]:
    """The official ``parse_qwen_bboxes``: (absolute xyxy boxes, parse-error code or "")."""
    if not text or not text.strip():
        return [], EMPTY_RESPONSE
    parsed = load_last_json_candidate(text)
    if parsed is None:
        return [], NO_BBOX_FOUND
    raw = collect_boxes(parsed)
    if not raw:
        return [], NO_BBOX_FOUND
    return to_abs_boxes(raw, width, height, fmt), ""


# -- per-family native formats (not the official JSON protocol) ---------------------------------------
_NUM = r"-?\d+(?:\.\d+)?"
_DOUBLE_BRACKET_RE = re.compile(rf"\[\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]")
_BOX_TAG_RE = re.compile(rf"<box>\s*\[?\[?\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})")
_GLM_BOX_RE = re.compile(rf"<\|begin_of_box\|>\s*\[?\[?\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})")
_ANY_LIST_RE = re.compile(rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]")


def _regex_boxes(pattern: re.Pattern[str], text: str) -> list[list[float]]:
    return [[float(v) for v in m.groups()] for m in pattern.finditer(text)][:MAX_BOXES]


def parse_bracket_boxes(text: str | None, width: float, height: float, fmt: str) -> tuple[list[list[float]], str]:
    """InternVL / CogVLM / GLM native boxes (``<box>``, ``<|begin_of_box|>``, ``[[x1,y1,x2,y2]]``)."""
    if not text or not text.strip():
        return [], EMPTY_RESPONSE
    for pattern in (_GLM_BOX_RE, _BOX_TAG_RE, _DOUBLE_BRACKET_RE, _ANY_LIST_RE):
        raw = _regex_boxes(pattern, text)
        if raw:
            return to_abs_boxes(raw, width, height, fmt), ""
    return [], NO_BBOX_FOUND


PARSERS = {"json": parse_json_boxes, "bracket": parse_bracket_boxes}


def parse_distractor_count(x: Any) -> int:
    """The official ``parse_distractor_count``: int, list (its length) or a JSON/number string.

    The official quirk is kept: a non-JSON string counts its *numbers*, not their value. One
    deliberate difference: a float (pandas turns an int column with gaps into floats) is truncated
    to an int, where the official code would count the digit groups of ``"5.0"``.
    """
    if x is None:
        return 0
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return max(0, int(x))
    if isinstance(x, float) and x == x:
        return max(0, int(x))
    if isinstance(x, (list, tuple)):
        return len(x)
    if hasattr(x, "tolist"):  # numpy arrays from parquet list columns
        v = x.tolist()
        return len(v) if isinstance(v, list) else parse_distractor_count(v)
    s = str(x).strip()
    if not s:
        return 0
    try:
        obj = json.loads(s)
        if isinstance(obj, list):
            return len(obj)
        if isinstance(obj, int) and not isinstance(obj, bool):
            return max(0, obj)
    except ValueError:
        pass
    return len(re.findall(r"\d+", s))
