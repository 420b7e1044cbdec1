"""Set-of-mark (SoM) prompting, as Ref-Adv ran GPT-4o and Claude-3.5 Sonnet (Table 6's "SoM?" column): numbered
marks are drawn on the image over region proposals, the model answers a mark, and the mark maps back to its box,
which is scored as any predicted box (first-box IoU, Acc@t).

The paper took its proposals from Semantic-SAM and published neither its SoM prompt nor its mark drawing. The
proposals come from a pluggable source (:func:`proposal_source`):

- ``semantic-sam[:CHECKPOINT]``: Semantic-SAM's automatic masks, as the paper, where the ``semantic_sam`` package
  and a checkpoint are installed;
- ``grounding-dino[:MODEL]``: the stated substitute, the zero-shot detector RACQUET's referent analysis already
  loads (:mod:`vlamb_nb.scorers.grounding`), prompted with the expression (``tiny`` for the tiny random one);
- ``release``: the release's own boxes, offline: every target box the data gives on the item's image;
- ``coco:PATH``: every COCO instance box of the image (``instances_val2017.json``), for the COCO rows.

A run names its source in its meta and records the substitutes as deviations; the proposals of every item are kept
with its request (``meta["som_boxes"]``), so a stored run scores again without the source.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from vlamb_nb.errors import DataError, NotAvailableError, SettingError

#: our SoM prompts: the paper publishes none (recorded as a deviation); the wording follows the official
#: grounding prompts, and CoT adds the official "Think first, then answer." line
PROMPTS = {
    "direct": 'The image shows numbered marks on candidate regions. Which mark is the object that matches the '
              'description "{ref_sentence}"? Answer with the number of the mark only.',
    "cot": 'The image shows numbered marks on candidate regions. Which mark is the object that matches the '
           'description "{ref_sentence}"?\nThink first, then answer.\nFinally report the number of the mark as '
           '"Mark: <number>".',
}
#: the parse error of an answer that names no mark of the image (IoU 0, a miss, in the denominator)
NO_MARK_FOUND = "no_mark_found"
#: two proposals overlapping this much are one mark (detectors and mask generators repeat regions)
DUPLICATE_IOU = 0.9


def _box(b: Any) -> list[float]:
    return [float(v) for v in list(b)[:4]]


def distinct_regions(boxes: list[list[float]], *, iou: float = DUPLICATE_IOU) -> list[list[float]]:
    """``boxes`` without near-duplicates (IoU >= ``iou`` with one kept before), degenerate boxes dropped, in
    reading order (top to bottom, then left to right), so a mark's number says nothing about which is the target."""
    from vlamb_nb.boxes import iou as box_iou

    kept: list[list[float]] = []
    for b in sorted((_box(b) for b in boxes), key=lambda b: (round(b[1]), round(b[0]), b[2], b[3])):
        if b[2] <= b[0] or b[3] <= b[1]:
            continue
        if all(box_iou(b, k) < iou for k in kept):
            kept.append(b)
    return kept


@runtime_checkable
class ProposalSource(Protocol):
    """Where the candidate regions come from: absolute xyxy boxes of the original image for one item."""

    name: str

    def propose(self, item: Any) -> list[list[float]]:
        ...


@dataclass
class ReleaseBoxes:
    """The release's own boxes: every target box the items give on the same image (Ref-Adv-s asks several
    expressions about one image, each naming another object). Offline and deterministic; on a part of the
    release an image has only the boxes of the rows at hand."""

    items: Any
    name: str = "release boxes"
    _by_image: dict[str, list[list[float]]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for img, box in zip(self.items["file_name"].astype(str), self.items["gt_xyxy"], strict=True):
            self._by_image.setdefault(img, []).append(_box(box))

    def propose(self, item: Any) -> list[list[float]]:
        return distinct_regions(self._by_image.get(str(item["file_name"]), []) or [_box(item["gt_xyxy"])])


@dataclass
class CocoBoxes:
    """Every COCO instance box of the item's image, from an ``instances_*.json`` (matched by file name)."""

    path: str | os.PathLike
    name: str = ""
    _by_file: dict[str, list[list[float]]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        from vlamb_nb.jsonl import read_json

        data = read_json(self.path, expect=dict, what="COCO annotations")
        for key in ("images", "annotations"):
            if not isinstance(data.get(key), list):
                raise DataError("not a COCO instances file", source=str(self.path), field=key)
        names = {int(im["id"]): str(im["file_name"]) for im in data["images"]}
        for ann in data["annotations"]:
            x, y, w, h = (float(v) for v in ann["bbox"])
            self._by_file.setdefault(names.get(int(ann["image_id"]), ""), []).append([x, y, x + w, y + h])
        self.name = self.name or f"COCO instances ({Path(self.path).name})"

    def propose(self, item: Any) -> list[list[float]]:
        return distinct_regions(self._by_file.get(str(item["file_name"]), []))


@dataclass
class DetectorBoxes:
    """A zero-shot detector's boxes for the item's expression (Grounding DINO: the package's stated substitute for
    Semantic-SAM), best first, at most ``max_marks``."""

    grounder: Any
    max_marks: int = 20
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or f"detector {getattr(self.grounder, 'name', self.grounder)}"

    def propose(self, item: Any) -> list[list[float]]:
        from vlamb_nb.images import load_image

        dets = self.grounder.ground(load_image(item["image"]).convert("RGB"), str(item["expression"]),
                                    key=str(item.get("id")))
        return distinct_regions([list(d.box) for d in dets[: self.max_marks]])


@dataclass
class SemanticSAMBoxes:
    """Semantic-SAM's automatic masks (the paper's source) as boxes; needs the ``semantic_sam`` package
    (UX-Decoder/Semantic-SAM) and its checkpoint, loaded on first use."""

    checkpoint: str | os.PathLike = "swinl_only_sam_many2many.pth"
    model_type: str = "L"
    level: tuple[int, ...] = (3,)
    max_marks: int = 40
    name: str = "Semantic-SAM"
    _generator: Any = field(default=None, init=False, repr=False)

    def _load(self) -> Any:
        if self._generator is None:
            try:
                from semantic_sam import SemanticSamAutomaticMaskGenerator, build_semantic_sam
            except ImportError:
                raise NotAvailableError("Semantic-SAM is not installed (pip install from UX-Decoder/Semantic-SAM); "
                                        "use proposals='grounding-dino', the stated substitute") from None
            if not Path(self.checkpoint).is_file():
                raise NotAvailableError(f"Semantic-SAM checkpoint not found: {self.checkpoint}")
            self._generator = SemanticSamAutomaticMaskGenerator(
                build_semantic_sam(model_type=self.model_type, ckpt=str(self.checkpoint)), level=list(self.level))
        return self._generator

    def propose(self, item: Any) -> list[list[float]]:
        import numpy as np

        from vlamb_nb.images import load_image

        gen = self._load()
        img = load_image(item["image"]).convert("RGB")
        masks = gen.generate(np.asarray(img))
        masks = sorted(masks, key=lambda m: -float(m.get("area", 0)))[: self.max_marks]
        return distinct_regions([[m["bbox"][0], m["bbox"][1], m["bbox"][0] + m["bbox"][2], m["bbox"][1] + m["bbox"][3]]
                       for m in masks])


def facts(proposals: Any) -> dict[str, Any]:
    """What a run records of its proposals (their source's name), nothing without them."""
    return {} if proposals is None else {"proposals": getattr(proposals, "name", proposals)}


def semantic_sam_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("semantic_sam") is not None


def proposal_source(spec: str | ProposalSource | None, items: Any = None, *, profile: str = "offline",
                    **kwargs: Any) -> ProposalSource:
    """A proposal source from its name: ``release`` (the items' own boxes), ``coco:PATH``, ``grounding-dino`` or
    ``grounding-dino:MODEL`` (``tiny`` for the tiny random detector), ``semantic-sam`` or ``semantic-sam:CKPT``;
    an instance is returned as it is. None: ``release`` offline; under the paper profile Semantic-SAM where it
    is installed, else Grounding DINO (the stated substitute)."""
    if spec is not None and not isinstance(spec, str):
        if not isinstance(spec, ProposalSource):
            raise SettingError(f"not a proposal source (it needs name and propose(item)): {spec!r}")
        return spec
    if spec is None:
        spec = "release" if profile == "offline" else ("semantic-sam" if semantic_sam_installed() else
                                                      "grounding-dino")
    m = re.fullmatch(r"([\w-]+)(?::(.+))?", spec.strip())
    kind, arg = (m[1], m[2] or "") if m else (spec, "")
    if kind == "release":
        if items is None:
            raise SettingError("proposals='release' needs the items whose boxes it proposes")
        return ReleaseBoxes(items)
    if kind == "coco":
        if not arg:
            raise SettingError("proposals='coco:PATH' needs the path of a COCO instances_*.json")
        return CocoBoxes(arg)
    if kind in ("grounding-dino", "tiny"):
        from vlamb_nb.scorers.grounding import get_grounder

        model = "tiny" if kind == "tiny" else (arg or None)
        opts = {"box_threshold": 0.0, "text_threshold": 0.0} if model == "tiny" else {}
        return DetectorBoxes(get_grounder(model, **{**opts, **kwargs}))
    if kind == "semantic-sam":
        return SemanticSAMBoxes(arg, **kwargs) if arg else SemanticSAMBoxes(**kwargs)
    raise SettingError(f"unknown proposal source {spec!r}; choose release, coco:PATH, grounding-dino[:MODEL], "
                       "tiny or semantic-sam[:CHECKPOINT]")


# -- the marked image --------------------------------------------------------------------------------------
PALETTE = ((230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180), (70, 240, 240),
           (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128))


def draw_marks(image: Any, boxes: list[list[float]]):
    """``image`` with each box outlined and its number (1, 2, ...) in a filled tag at the box's centre, as SoM
    marks regions; returns a new RGB image of the same size (the boxes stay in its coordinates)."""
    from PIL import ImageDraw, ImageFont

    img = image.convert("RGB").copy()
    draw = ImageDraw.Draw(img)
    size = max(12, min(img.size) // 22)
    try:
        font = ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one bitmap size
        font = ImageFont.load_default()
    for k, b in enumerate(boxes, 1):
        colour = PALETTE[(k - 1) % len(PALETTE)]
        draw.rectangle(b, outline=colour, width=max(2, size // 6))
        cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
        x0, y0, x1, y1 = draw.textbbox((cx, cy), str(k), font=font, anchor="mm")
        pad = max(2, size // 6)
        draw.rectangle((x0 - pad, y0 - pad, x1 + pad, y1 + pad), fill=colour)
        draw.text((cx, cy), str(k), fill=(255, 255, 255), font=font, anchor="mm")
    return img


def marked_image(src: Any, boxes: list[list[float]], expect_size: tuple[Any, Any] | None = None) -> bytes:
    """The image the model is shown: marks drawn, re-encoded as the official runner sends images (RGB JPEG 95)."""
    from vlamb_nb.images import load_image

    buf = io.BytesIO()
    draw_marks(load_image(src, expect_size=expect_size), boxes).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def prompt_text(expression: str, mode: str = "direct") -> str:
    if mode not in PROMPTS:
        raise SettingError(f"unknown prompt mode {mode!r}; choose direct or cot")
    return PROMPTS[mode].format(ref_sentence=expression)


# -- the answer: a mark, back to its box -------------------------------------------------------------------------
_NAMED = re.compile(r"(?:mark|answer|number|region|label)\s*(?:is|:|=|#|no\.?)?\s*[\[(#]*\s*(\d+)", re.I)
_ANY = re.compile(r"(?<![\d.\-])(\d+)(?![\d.])")


def mark_of(text: str | None, n_marks: int) -> int | None:
    """The mark an answer names: the last "Mark: N" / "Answer: N", else its last number; None when that is no mark
    of the image (1..``n_marks``) or there is none (:func:`vlamb_nb.benchmarks.refadv.parse.parse_answer` reads it
    as ``no_mark_found``)."""
    t = str(text or "")
    numbers = _NAMED.findall(t) or _ANY.findall(t)
    mark = int(numbers[-1]) if numbers else None
    return mark if mark is not None and 1 <= mark <= n_marks else None


def recall(scored, threshold: float = 0.5) -> dict[str, Any]:
    """What the proposals allow: the share of items whose marks hold a box with IoU >= ``threshold`` with the
    target (the ceiling of Acc@t under SoM), the marks per item, and how often the model's mark was the best one."""
    import numpy as np

    from vlamb_nb.boxes import iou

    reach, marks, best = [], [], []
    for boxes, gt, mark in zip(scored["som_boxes"], scored["gt_xyxy"], scored.get("mark", [None] * len(scored)),
                               strict=True):
        boxes = list(boxes) if boxes is not None else []
        ious = [iou(_box(b), _box(gt)) for b in boxes]
        marks.append(len(boxes))
        reach.append(bool(ious) and max(ious) >= threshold)
        if ious and mark is not None and not (isinstance(mark, float) and np.isnan(mark)) and 1 <= int(mark) <= len(ious):
            best.append(int(np.argmax(ious)) + 1 == int(mark))
    n = len(scored)
    return {"items": n, "proposal_recall": 100.0 * sum(reach) / n if n else float("nan"),
            "marks_per_item": float(np.mean(marks)) if marks else float("nan"),
            "picked_best_mark": 100.0 * sum(best) / len(best) if best else float("nan"), "threshold": threshold}
