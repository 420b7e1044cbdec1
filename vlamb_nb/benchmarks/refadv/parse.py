"""Ref-Adv answer parsing: an exact port of the official JSON box parser, plus per-family parsers.

The official parser (Ref-Adv ``run.py``) reads the *last* loadable fenced JSON block, else the one
unfenced JSON value that ends the reply; collects every 4-number list recursively (priority keys
first), converts each to absolute xyxy, dedupes, and the first box is scored. A reply that yields
no box gets one repair turn with :data:`FOLLOWUP_TEXT`.

Families whose native output is not JSON (InternVL ``[[..]]``/``<box>``, CogVLM ``[[..]]``, GLM box
tokens) have their own small parsers, used only when a run selects them. Which style a model gets:
its family (Hugging Face) or its name (OpenAI-compatible servers report no family), see :func:`style_for`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from vlamb_nb import boxes
from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import Backend, ModelInfo

FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", flags=re.S | re.I)
PRIORITY_KEYS = ("bboxes", "boxes", "bbox", "bbox_2d", "predictions", "results", "objects", "coordinates")
MAX_BOXES = 100

# parse-error codes exactly as they appear in the official prediction files
EMPTY_RESPONSE = "empty_response"
NO_BBOX_FOUND = "no_bbox_found"
BACKEND_ERROR = "backend_error"


@dataclass(frozen=True)
class FamilyFormat:
    """A box format the official converter lacks: a reorder of an official one, tied to JSON keys.

    The reorder applies only to boxes found under one of ``keys``: the same model answers the repair
    turn's ``{"bboxes": [[x1, y1, x2, y2]]}`` schema in x/y order, and those boxes are read as ``base``.
    """

    base: str  # the official format after reordering
    order: tuple[int, int, int, int]
    keys: tuple[str, ...]


# Gemini's documented convention is "box_2d": [ymin, xmin, ymax, xmax] on a 0-1000 grid (notes §1.2,
# inferred: the paper does not say how Gemini's boxes were read).
FAMILY_FORMATS: dict[str, FamilyFormat] = {
    "norm_1000_yxyx": FamilyFormat("norm_1000_xyxy", (1, 0, 3, 2), ("box_2d",)),
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


def collect_keyed_boxes(obj: Any, out: list[tuple[list[float], str | None]] | None = None, *,
                        key: str | None = None, max_boxes: int = MAX_BOXES) -> list[tuple[list[float], str | None]]:
    """Every 4-number list in ``obj`` with the nearest dict key above it (None at top level).

    The official order: depth first, dict priority keys before the others. Like the official code,
    ``bool`` counts as a number (it is an ``int`` in Python). The key decides family reorders.
    """
    out = [] if out is None else out
    if len(out) >= max_boxes:
        return out
    if isinstance(obj, list):
        if len(obj) == 4 and all(isinstance(x, (int, float)) for x in obj):
            out.append(([float(v) for v in obj], key))
            return out
        for it in obj:
            collect_keyed_boxes(it, out, key=key, max_boxes=max_boxes)
        return out
    if isinstance(obj, dict):
        for k in PRIORITY_KEYS:
            if k in obj:
                collect_keyed_boxes(obj[k], out, key=k, max_boxes=max_boxes)
        for k, v in obj.items():
            if k not in PRIORITY_KEYS:
                collect_keyed_boxes(v, out, key=str(k), max_boxes=max_boxes)
    return out


def to_abs(box: list[float], width: float, height: float, fmt: str) -> tuple[float, float, float, float]:
    """One box in any declared format (official or family) as absolute xyxy, sorted and clipped."""
    if fmt in FAMILY_FORMATS:
        ff = FAMILY_FORMATS[fmt]
        box, fmt = [box[i] for i in ff.order], ff.base
    elif fmt not in boxes.FORMATS:
        raise SettingError(f"unknown box format {fmt!r}; choose one of {', '.join(BOX_FORMATS)}")
    return boxes.to_abs_xyxy(box, width, height, fmt)


def box_format_for_key(fmt: str, key: str | None) -> str:
    """The format one box is read in: a family format only under its own keys, else its base."""
    if fmt in FAMILY_FORMATS:
        ff = FAMILY_FORMATS[fmt]
        return fmt if key in ff.keys else ff.base
    return fmt


def to_abs_boxes(raw: list[list[float]], width: float, height: float, fmt: str,
                 keys: list[str | None] | None = None) -> list[list[float]]:
    """Convert, sort corners, clip and dedupe (coordinates rounded to 6 decimals), keeping order.

    ``keys`` are the JSON keys the boxes sat under; a family format reorders only boxes under its
    keys, so boxes without keys (bracket text) are read in its base order.
    """
    if keys is None:
        keys = [None] * len(raw)
    if len(keys) != len(raw):
        raise ValueError(f"{len(raw)} boxes but {len(keys)} keys")
    out: list[list[float]] = []
    seen: set[tuple[float, ...]] = set()
    for b, k in zip(raw, keys, strict=True):
        bb = list(to_abs(b, width, height, box_format_for_key(fmt, k)))
        key = tuple(round(v, 6) for v in bb)
        if key in seen:
            continue
        seen.add(key)
        out.append(bb)
    return out


def parse_json_boxes(text: str | None, width: float, height: float, fmt: str = "abs_xyxy"
                     ) -> tuple[list[list[float]], str]:
    """The official ``parse_qwen_bboxes``: (absolute xyxy boxes, parse-error code or "").

    A family format (e.g. Gemini's ``box_2d`` y/x order) applies only to boxes under its keys.
    """
    if not text or not text.strip():
        return [], EMPTY_RESPONSE
    parsed = load_last_json_candidate(text)
    if parsed is None:
        return [], NO_BBOX_FOUND
    keyed = collect_keyed_boxes(parsed)
    if not keyed:
        return [], NO_BBOX_FOUND
    return to_abs_boxes([b for b, _ in keyed], width, height, fmt, [k for _, k in keyed]), ""


# -- per-family native formats (not the official JSON protocol) ---------------------------------------
_NUM = r"-?\d+(?:\.\d+)?"
_DOUBLE_BRACKET_RE = re.compile(rf"\[\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]")
_BOX_TAG_RE = re.compile(rf"<box>\s*\[?\[?\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})")
_GLM_BOX_RE = re.compile(rf"<\|begin_of_box\|>\s*\[?\[?\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})")
_ANY_LIST_RE = re.compile(rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]")


def _regex_boxes(pattern: re.Pattern[str], text: str) -> list[list[float]]:
    return [[float(v) for v in m.groups()] for m in pattern.finditer(text)][:MAX_BOXES]


def parse_bracket_boxes(text: str | None, width: float, height: float, fmt: str) -> tuple[list[list[float]], str]:
    """InternVL / CogVLM / GLM native boxes (``<box>``, ``<|begin_of_box|>``, ``[[x1,y1,x2,y2]]``).

    These boxes carry no JSON key, so a family format is read in its base (x/y) order.
    """
    if not text or not text.strip():
        return [], EMPTY_RESPONSE
    for pattern in (_GLM_BOX_RE, _BOX_TAG_RE, _DOUBLE_BRACKET_RE, _ANY_LIST_RE):
        raw = _regex_boxes(pattern, text)
        if raw:
            return to_abs_boxes(raw, width, height, fmt), ""
    return [], NO_BBOX_FOUND


@dataclass(frozen=True)
class GroundingStyle:
    """How one model family is asked for a box and how its answer is read, declared once."""

    name: str
    box_format: str  # what the model's numbers mean (BOX_FORMATS)
    prompt: str = "official"  # official | internvl | cogvlm | som
    parser: str = "json"  # json (official) | bracket | json+bracket | som (a mark, :mod:`.som`)
    resized_pixels: bool = False  # absolute pixels of the processor-resized image (Qwen2/2.5-VL)
    keep_image_tag: bool = True  # keep the literal "<image>" of the official prompt
    supports_cot: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        if self.box_format not in BOX_FORMATS:
            raise SettingError(f"unknown box format {self.box_format!r}; choose one of {', '.join(BOX_FORMATS)}")


STYLES: dict[str, GroundingStyle] = {s.name: s for s in (
    GroundingStyle("official", "abs_xyxy", note="the official runner as released (Qwen2.5-VL via a vLLM server)"),
    GroundingStyle("qwen2_5_vl", "abs_xyxy", resized_pixels=True,
                   note="absolute pixels of the resized image, mapped back to the original size"),
    GroundingStyle("qwen3_vl", "norm_1000_xyxy", note="0-1000 grid (official config)"),
    GroundingStyle("internvl", "norm_1000_xyxy", prompt="internvl", parser="bracket",
                   note="InternVL REC prompt with <ref>; [[x1,y1,x2,y2]] on a 0-1000 grid"),
    GroundingStyle("cogvlm", "norm_1000_xyxy", prompt="cogvlm", parser="bracket", supports_cot=False,
                   note="'Where is ...?' question; [[x0,y0,x1,y1]] on a 0-1000 grid; no CoT (paper)"),
    GroundingStyle("glm4v", "norm_1000_xyxy", parser="json+bracket",
                   note="official JSON prompt; box tokens <|begin_of_box|> accepted when no JSON box is found"),
    GroundingStyle("gemini", "norm_1000_yxyx", keep_image_tag=False,
                   note="official JSON prompt; Gemini's documented box_2d [ymin, xmin, ymax, xmax] on a 0-1000 "
                        "grid, other keys read as [x1, y1, x2, y2]; the paper does not state how Gemini's boxes "
                        "were read"),
    GroundingStyle("generic", "norm_1_xyxy", keep_image_tag=False,
                   note="official JSON prompt without the literal <image> (an image token for these processors)"),
    GroundingStyle("som", "abs_xyxy", prompt="som", parser="som", keep_image_tag=False,
                   note="set-of-mark prompting (Table 6's GPT-4o and Claude rows): numbered marks on region "
                        "proposals, the answered mark mapped back to its box; our prompt and marks (the paper "
                        "publishes neither)"),
)}


# Hugging Face: the family row (models/families.py) names the style. Qwen3.5 is read on the 0-1000
# grid like Qwen3-VL (the official config). LLaVA-OneVision's convention is unknown (notes §1.2),
# so it keeps the 0-1 default, stated here rather than left to the fallback.
FAMILY_STYLE = {"qwen2_vl": "qwen2_5_vl", "qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl",
                "qwen3_vl_moe": "qwen3_vl", "qwen3_5": "qwen3_vl", "internvl": "internvl",
                "internvl_chat": "internvl", "cogvlm": "cogvlm", "glm4v": "glm4v", "glm4v_moe": "glm4v",
                "gemini": "gemini", "llava_onevision": "generic"}
HF_DEFAULT_STYLE = "generic"  # a family without a row: the official prompt, 0-1 boxes

# OpenAI-compatible servers report no family, so the served model's name decides; first match wins.
# As the official config reads them: Qwen3-VL and Qwen3.5 on the 0-1000 grid, Qwen2(.5)-VL as absolute
# pixels with no resize correction (the server's resized size is not known here, as in the official runner).
NAME_STYLES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"gemini"), "gemini"),  # Gemini's OpenAI-compatible endpoint keeps its own box order
    (re.compile(r"qwen3[-_]?vl"), "qwen3_vl"),
    (re.compile(r"qwen3[._]5"), "qwen3_vl"),
    (re.compile(r"qwen2(?:[._]5)?[-_]?vl"), "official"),
)
OPENAI_DEFAULT_STYLE = "official"  # other served models: absolute pixels, as the official runner reads Qwen2.5-VL


def style_from_name(model_id: str) -> str | None:
    """The style a model name implies (:data:`NAME_STYLES`), or None when no rule matches."""
    low = str(model_id).lower()
    return next((name for pattern, name in NAME_STYLES if pattern.search(low)), None)


def choose_style(model: ModelInfo | None, style: str | GroundingStyle | None = None, *,
                 proposals: Any = None) -> tuple[GroundingStyle, str]:
    """The grounding style and why it was chosen (recorded in the run metadata); region ``proposals`` ask for
    set-of-mark prompting (``som``), and refuse another style named with them."""
    if proposals is not None:
        st, why = choose_style(model, style or "som")
        if st.prompt != "som":
            raise SettingError(f"proposals= asks for set-of-mark prompting, but style={st.name!r} was given")
        return st, why
    if isinstance(style, GroundingStyle):
        return style, "explicit"
    if style is not None:
        if style not in STYLES:
            raise SettingError(f"unknown grounding style {style!r}; choose one of {', '.join(STYLES)}")
        return STYLES[style], "explicit"
    if model is None or model.backend is Backend.SCRIPTED:
        return STYLES["official"], "default for scripted models"
    if model.backend is Backend.FILE:
        return STYLES["official"], "default for prediction files"
    if model.backend is Backend.REPLAY and model.family in FAMILY_STYLE:
        return STYLES[FAMILY_STYLE[str(model.family)]], f"model family {model.family!r} (replayed outputs)"
    if model.backend.served:  # served or recorded outputs: only the name tells the format
        named = style_from_name(model.model_id)
        if named is not None:
            return STYLES[named], f"model name {model.model_id!r}"
        return STYLES[OPENAI_DEFAULT_STYLE], "default for OpenAI-compatible models (no name rule matched)"
    family = str(model.family or "")
    if family in FAMILY_STYLE:
        return STYLES[FAMILY_STYLE[family]], f"model family {family!r}"
    return STYLES[HF_DEFAULT_STYLE], f"default for family {family or 'unknown'!r}"


def style_for(model: ModelInfo | None, style: str | GroundingStyle | None = None, *,
              proposals: Any = None) -> GroundingStyle:
    """The grounding style: explicit, set-of-mark with ``proposals``, else from the family (HF) or the model name
    (OpenAI-compatible)."""
    return choose_style(model, style, proposals=proposals)[0]


def parse_descriptors(text: str, expression: str) -> list[str]:
    """Descriptors from the extractor's JSON list; only phrases that occur in the expression count."""
    obj = load_last_json_candidate(text or "")
    if not isinstance(obj, list):
        return []
    low = expression.lower()
    return [s.strip() for s in obj if isinstance(s, str) and s.strip() and s.strip().lower() in low]


def clean_rewrite(text: str) -> str:
    line = next((ln for ln in str(text or "").strip().splitlines() if ln.strip()), "")
    return line.strip().strip('"').strip()


def _processed_size(item: Any) -> tuple[float, float] | None:
    sizes = item.get("processed_image_sizes")
    if sizes is None or (hasattr(sizes, "__len__") and len(sizes) == 0):
        return None
    first = sizes[0]
    try:
        return float(first[0]), float(first[1])
    except (TypeError, ValueError, IndexError):
        return None


#: what an answer whose generation failed reads as: the official runner's ``backend_error``, never a silent miss
BACKEND_FAILED: dict[str, Any] = {"pred_boxes": [], "pred_xyxy": [], "parse_error": BACKEND_ERROR, "valid": False,
                                  "n_boxes": 0}


def parse_answer(text: str, item: Any) -> dict[str, Any]:
    """Boxes in absolute original-image xyxy with the official error code; the first box is scored.

    ``item`` may carry ``box_format``, ``parser`` and, for resized-pixel styles, ``processed_image_sizes``.
    """
    fmt = item.get("box_format") or "abs_xyxy"
    parser = item.get("parser") or "json"
    if parser == "som":
        return parse_mark(text, item.get("som_boxes"))
    w, h = float(item["width"]), float(item["height"])
    size = _processed_size(item) if item.get("resized_pixels") and fmt == "abs_xyxy" else None
    pw, ph = size or (w, h)
    fn = parse_bracket_boxes if parser == "bracket" else parse_json_boxes
    found, err = fn(text, pw, ph, fmt)
    if parser == "json+bracket" and err == NO_BBOX_FOUND:
        found, err = parse_bracket_boxes(text, pw, ph, fmt)
    if size is not None and size != (w, h):
        found = [list(boxes.clip(boxes.rescale(b, size, (w, h)), w, h)) for b in found]
    return {"pred_boxes": found, "pred_xyxy": found[0] if found else [], "parse_error": err, "valid": not err,
            "n_boxes": len(found)}


def parse_mark(text: str | None, boxes: Any) -> dict[str, Any]:
    """A set-of-mark answer (:mod:`.som`): the mark it names, mapped back to that proposal's box (absolute xyxy);
    an empty answer is ``empty_response``, one naming no mark of the image ``no_mark_found``."""
    from vlamb_nb.benchmarks.refadv.som import NO_MARK_FOUND, mark_of

    boxes = [] if boxes is None else [[float(v) for v in list(b)[:4]] for b in boxes]
    if not str(text or "").strip():
        return {"pred_boxes": [], "pred_xyxy": [], "parse_error": EMPTY_RESPONSE, "valid": False, "n_boxes": 0,
                "mark": None}
    mark = mark_of(text, len(boxes))
    if mark is None:
        return {"pred_boxes": [], "pred_xyxy": [], "parse_error": NO_MARK_FOUND, "valid": False, "n_boxes": 0,
                "mark": None}
    return {"pred_boxes": [boxes[mark - 1]], "pred_xyxy": boxes[mark - 1], "parse_error": "", "valid": True,
            "n_boxes": 1, "mark": mark}


def needs_repair(parse: dict[str, Any]) -> bool:
    """The official rule for the one repair turn: the answer is empty or holds no box."""
    return parse["parse_error"] in (EMPTY_RESPONSE, NO_BBOX_FOUND)


def style_deviations(st: GroundingStyle, model: ModelInfo, max_new_tokens: int, *,
                     repair_text: str = "official", proposals: str | None = None) -> list[Any]:
    """The deviations of the grounding style, token budget and repair text a run uses (and, under set-of-mark
    prompting, of its proposals)."""
    from vlamb_nb.benchmarks.refadv.prompts import OFFICIAL_MAX_TOKENS
    from vlamb_nb.meta import Deviation

    out = []
    if max_new_tokens != OFFICIAL_MAX_TOKENS:
        out.append(Deviation("max new tokens", str(OFFICIAL_MAX_TOKENS), str(max_new_tokens), "all"))
    if repair_text != "official":
        out.append(Deviation("repair turn text", "one line with literal backslash-n pairs (single-quoted YAML)",
                             f"{repair_text!r} variant (real line breaks)", "repair turns"))
    if st.resized_pixels:
        out.append(Deviation("box rescale", "none (official code reads resized-image pixels as original)",
                             "resized-image pixels mapped to the original size", "all"))
    if not st.keep_image_tag:
        out.append(Deviation("prompt", "literal '<image>' line before the instruction",
                             "dropped (an image token for this processor)", "all"))
    if st.prompt == "som":
        out.append(Deviation("set-of-mark prompt and marks", "unpublished", "ours (som.PROMPTS; numbered tags at "
                             "each region's centre, box outlines)", "all"))
        out.append(Deviation("repair turn", "the official runner's JSON repair turn", "none (a mark is asked)",
                             "all"))
        if proposals and proposals != "Semantic-SAM":
            out.append(Deviation("SoM proposals", "Semantic-SAM masks", str(proposals), "all"))
    elif st.name not in ("official", "qwen2_5_vl", "qwen3_vl"):
        out.append(Deviation("grounding style", "per-model best-practice prompts (unpublished)", st.note, "all"))
    return out


# -- the answer that counts, beside its item ----------------------------------------------------------------
def answer_row(item, req: Any, gen: dict[str, Any], st: GroundingStyle) -> dict[str, Any]:
    """One answer as a generation row: what was asked, what came back, and how it is to be read."""
    row = {"item_id": str(item["id"]), "request_id": req.id, "expression_asked": req.meta.get("expression_asked"),
           "text": gen.get("text"), "error": gen.get("error"), "finish_reason": gen.get("finish_reason"),
           "cached": gen.get("cached"), "processed_image_sizes": gen.get("processed_image_sizes"),
           "retry_used": False, "first_text": None, "box_format": st.box_format, "parser": st.parser,
           "resized_pixels": st.resized_pixels}
    if st.parser == "som":
        row["som_boxes"] = req.meta.get("som_boxes") or []
        row["proposals"] = req.meta.get("proposals")
    for extra in ("deleted_expression", "deleted_descriptor", "deletion_status"):
        if extra in item.index:
            row[extra] = item[extra]
    return row


def unboxed(items, first: Any, st: GroundingStyle) -> list[tuple[Any, str]]:
    """(request, reply) of each first answer the official runner repairs: it came back, but holds no box."""
    out = []
    by_id = items.assign(_id=items["id"].astype(str)).set_index("_id", drop=True)
    for req, gen in zip(first.requests, first.generations.to_dict(orient="records"), strict=True):
        item = by_id.loc[req.item_id]
        err = gen.get("error")
        if not (isinstance(err, str) and err):
            row = {**item.to_dict(), **answer_row(item, req, gen, st)}
            if needs_repair(parse_answer(gen.get("text") or "", row)):
                out.append((req, gen["text"] or ""))
    return out


def answers(items, asked: list[Any], st: GroundingStyle):
    """One row per item from a run's turns: the answer that counts (the repair turn's where one was sent)."""
    import pandas as pd

    first = asked[0]
    by_id = items.assign(_id=items["id"].astype(str)).set_index("_id", drop=True)
    rows = [answer_row(by_id.loc[req.item_id], req, gen, st)
            for req, gen in zip(first.requests, first.generations.to_dict(orient="records"), strict=True)]
    at = {req.item_id: i for i, req in enumerate(first.requests)}
    for later in asked[1:]:
        for req, gen in zip(later.requests, later.generations.to_dict(orient="records"), strict=True):
            i = at[req.item_id]
            first_text = rows[i]["text"]
            rows[i] = answer_row(by_id.loc[req.item_id], req, gen, st)
            rows[i].update(retry_used=True, first_text=first_text)
    return pd.DataFrame(rows)


def beside_items(items, answered, id_column: str = "id"):
    """Each answer beside its item's columns (not the image); an answer naming no item is an error."""
    import pandas as pd

    from vlamb_nb.benchmarks.refadv.data import ITEM_COLUMNS
    from vlamb_nb.errors import DataError

    idx = items.assign(**{id_column: items[id_column].astype(str)}).set_index(id_column, drop=False)
    missing = sorted(set(answered["item_id"].astype(str)) - set(idx.index))
    if missing:
        raise DataError(f"{len(missing)} answer(s) name items that are not in the data, e.g. {missing[0]!r}")
    rows = []
    for gen in answered.to_dict(orient="records"):
        item = idx.loc[str(gen["item_id"])]
        rows.append({c: item[c] for c in ITEM_COLUMNS if c != "image" and c in item.index} | gen)
    return pd.DataFrame(rows)


# -- the scripted stand-in's replies (the inverse of the official parser) --------------------------------------
#: the scripted chance of a box that hits (IoU >= 0.5) per setting, in the paper's order: CoT above direct on the
#: full set (Table 6), word order and the expression itself matter (Tables 2 and 3: BoW below, "the one" far below)
SCRIPTED_ACCURACY = {"direct": 0.55, "cot": 0.62, "bow": 0.45, "fixed": 0.15, "deletion": 0.5}
#: right: the box hits at once, or only after the official repair turn (the first reply holds no box)
SCRIPTED_RIGHT = ("right", "right", "repaired")
#: the paper's failure modes: a box beside the target (IoU below 0.5), the wrong object, no box even after repair
SCRIPTED_ERRORS = ("near_miss", "wrong_object", "unparseable")
_STOP = {"the", "a", "an", "one", "box", "object", "of", "to", "from", "is", "not", "that", "which", "with", "in",
         "on", "and", "number"}


def _scripted_box(s: Any) -> list[float]:
    """The box a scripted outcome answers with, in absolute pixels of the original image: the gold box nudged by at
    most 4% of its size (a hit), shifted sideways by most of its width (a near miss, IoU well under 0.5), or a box of
    the same size elsewhere in the image (the wrong object)."""
    x1, y1, x2, y2 = (float(v) for v in s.item["gt_xyxy"])
    w_img, h_img = float(s.item["width"]), float(s.item["height"])
    bw, bh = x2 - x1, y2 - y1
    if s.outcome == "near_miss":
        dx = bw * (0.6 + 0.2 * s.u) * (1 if x2 + 0.8 * bw <= w_img else -1)
        box = [x1 + dx, y1, x2 + dx, y2]
    elif s.outcome == "wrong_object":
        cx = w_img - (x1 + x2) / 2 if abs(w_img - (x1 + x2)) > bw else (x1 + x2) / 2 + (w_img / 2 if x1 < w_img / 2
                                                                                      else -w_img / 2)
        cy = h_img - (y1 + y2) / 2
        box = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
    else:
        d = 0.04 * (2 * s.u - 1)
        box = [x1 + d * bw, y1 - d * bh, x2 + d * bw, y2 - d * bh]
    return [round(min(max(v, 0.0), lim), 1) for v, lim in zip(box, (w_img, h_img, w_img, h_img), strict=True)]


def _scripted_mark(s: Any, marks: list[Any], *, cot: bool) -> str:
    """A set-of-mark reply: the mark whose box overlaps the gold most when right (and the repair turn's hit when
    repaired), another mark for a miss, no mark for ``unparseable``."""
    gold = [float(v) for v in s.item["gt_xyxy"]]
    overlaps = [boxes.iou([float(v) for v in b], gold) for b in marks]
    best = max(range(len(marks)), key=overlaps.__getitem__) + 1
    if s.outcome == "unparseable":
        return "I cannot tell which mark it is."
    if s.right:
        mark = best
    else:  # another mark than the target's: one that misses it (IoU under 0.5), when there is one
        others = [k + 1 for k in range(len(marks)) if k + 1 != best and overlaps[k] < 0.5]
        mark = others[min(int(s.u * len(others)), len(others) - 1)] if others else None
        if mark is None:  # every mark holds the target: no wrong mark to give
            return "None of the marks fits the description."
    return (f"Comparing the marked regions with the description.\nMark: {mark}" if cot else str(mark))


def scripted_reply(request: Any, s: Any) -> str:
    """A scripted stand-in's reply (:meth:`Benchmark.scripted_reply`) in the official JSON the official parser reads
    (absolute pixels: the official grounding style a scripted model is read with): a hit, a near miss, the wrong
    object, or no box; ``repaired`` answers without a box first and with the hit in the repair turn, ``unparseable``
    never gives one. The descriptor-deletion prompts (Table 4) get descriptors and a rewrite."""
    from vlamb_nb.benchmarks.refadv.prompts import EXTRACT_PROMPT, REWRITE_PROMPT

    text = request.prompt_text
    expression = str(s.item.get("expression") or "")
    if text.startswith(EXTRACT_PROMPT.split("{", 1)[0][:40]):
        words = [w.strip(",.") for w in expression.split() if w.strip(",.").lower() not in _STOP]
        return json.dumps(words[:2])
    if text.startswith(REWRITE_PROMPT.split("{", 1)[0][:40]):
        gone = re.search(r'descriptor "([^"]*)"', text)
        drop = gone.group(1) if gone else ""
        return " ".join(w for w in expression.split() if w.strip(",.") != drop) or expression
    depth = sum(1 for m in request.messages if m.get("role") == "assistant")
    marks = (request.meta or {}).get("som_boxes")
    if marks:  # set-of-mark: the mark over the target (right), another mark (wrong), or none
        return _scripted_mark(s, marks, cot="Think first" in text)
    if s.outcome == "unparseable" or (s.outcome == "repaired" and depth == 0):
        return "The object described is near the middle of the picture." if depth == 0 else "I cannot tell which one."
    box = _scripted_box(s)
    if depth > 0:
        return "```json\n" + json.dumps({"bboxes": [box]}) + "\n```"
    answer = "```json\n" + json.dumps([{"bbox_2d": box, "label": expression[:40]}]) + "\n```"
    if "Think first" in text:
        return ("Let me compare each candidate with the description: the attributes and the relation single out "
                "one object.\n" + answer)
    return answer

