"""Pluggable text-to-box grounding: which image region does a phrase describe?

RACQUET grounds each single-referent answer with text-prompted SAM (lang-segment-anything,
whose box comes from Grounding DINO). Here a grounder is anything with
``ground(image, text) -> list[Detection]``. The default, :class:`ZeroShotDetector`, runs a
transformers zero-shot detector (Grounding DINO or OWLv2) from a local folder or hub id; another tool's boxes
replay through any object whose ``ground`` looks them up by ``key`` (the row, see :func:`ground_rows`).
``"tiny"`` / ``"tiny:owlv2"`` name the tiny random detectors of :mod:`vlamb_nb.models.tiny`.

Choices the paper leaves open are parameters: the text prompt (the whole response or a
phrase), the thresholds (lang-sam's defaults 0.3 / 0.25), and which detection is taken
(the highest score; none above threshold means "not grounded", which is counted).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from vlamb_nb.errors import NotAvailableError, SettingError
from vlamb_nb.models.spec import ModelSpec


@dataclass(frozen=True)
class Detection:
    """One box in absolute xyxy pixels of the original image, with its score and matched phrase."""

    box: tuple[float, float, float, float]
    score: float
    label: str = ""


@runtime_checkable
class Grounder(Protocol):
    name: str

    def ground(self, image: Any, text: str, key: str | None = None) -> list[Detection]:
        """Detections for ``text`` in ``image`` (PIL), best first; ``key`` names the row (for replayed boxes)."""
        ...


def best_box(detections: Sequence[Detection]) -> tuple[float, float, float, float] | None:
    """The highest-scoring box, or None when nothing was detected."""
    if not detections:
        return None
    return max(detections, key=lambda d: d.score).box


def prompt_text(text: str, *, max_words: int = 40) -> str:
    """A detector prompt from a response: whitespace-normalised, cut to ``max_words`` (text encoders are short)."""
    words = str(text).split()
    return " ".join(words[:max_words])


class ZeroShotDetector:
    """A transformers zero-shot object detector (Grounding DINO, OWLv2, OWL-ViT) behind :class:`Grounder`.

    ``model`` is a hub id or a local folder; the weights are loaded lazily on first use.
    Grounding DINO prompts are lower-cased and end with "." as lang-sam does.
    """

    def __init__(self, model: str | os.PathLike = "IDEA-Research/grounding-dino-base", *,
                 box_threshold: float = 0.3, text_threshold: float = 0.25, device: str = "cpu",
                 max_words: int = 40) -> None:
        self.model_id = str(model)
        self.name = f"zero-shot:{self.model_id}"
        self.box_threshold = box_threshold
        self.text_threshold = text_threshold
        self.device = device
        self.max_words = max_words
        self._model = None
        self._processor = None

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
        except ImportError:
            raise NotAvailableError("grounding needs transformers (pip install 'vlamb_nb[models]')") from None
        from vlamb_nb.hubcache import require_model

        require_model(self.model_id, what="grounding model")  # one line at once offline, not a minute of retries
        self._processor = AutoProcessor.from_pretrained(self.model_id)
        self._model = AutoModelForZeroShotObjectDetection.from_pretrained(self.model_id).to(self.device).eval()

    @property
    def kind(self) -> str:
        self._load()
        return str(self._model.config.model_type)  # type: ignore[union-attr]

    @property
    def text_limit(self) -> int:
        """The most text tokens this detector takes, read from its own config (Grounding DINO's
        ``max_text_len``, 256 for the released checkpoints; the OWL text encoder's position embeddings)."""
        self._load()
        cfg = self._model.config  # type: ignore[union-attr]
        limit = getattr(cfg, "max_text_len", None)
        if limit is None:
            text_cfg = getattr(cfg, "text_config", None)
            limit = getattr(text_cfg, "max_position_embeddings", None)
        tok_max = getattr(getattr(self._processor, "tokenizer", None), "model_max_length", None)
        if isinstance(tok_max, int) and tok_max < 100_000:
            limit = min(limit, tok_max) if limit else tok_max
        if not limit:
            raise NotAvailableError(f"{self.model_id}: cannot tell the detector's text limit from its config")
        return int(limit)

    def _fit(self, phrase: str, limit: int, *, reserve: int = 0) -> str:
        """``phrase`` cut to whole tokens so that it, the special tokens and ``reserve`` more fit in ``limit``
        (a longer text makes the detector's text features and its position tables disagree in size)."""
        tok = self._processor.tokenizer  # type: ignore[union-attr]
        budget = max(1, limit - tok.num_special_tokens_to_add() - reserve)
        ids = tok(phrase, add_special_tokens=False)["input_ids"]
        if len(ids) <= budget:
            return phrase
        return tok.decode(ids[:budget], skip_special_tokens=True).strip()

    def ground(self, image: Any, text: str, key: str | None = None) -> list[Detection]:
        import torch

        self._load()
        phrase = prompt_text(text, max_words=self.max_words)
        if not phrase:
            return []
        proc, model = self._processor, self._model
        w, h = image.size
        limit = self.text_limit
        if self.kind == "grounding-dino":
            phrase = self._fit(phrase.lower().rstrip("."), limit, reserve=1) + "."
            inputs = proc(images=image, text=phrase, return_tensors="pt", truncation=True, max_length=limit)
        else:  # OWL-ViT / OWLv2 take a list of queries per image
            phrase = self._fit(phrase, limit)
            inputs = proc(images=image, text=[[phrase]], return_tensors="pt", truncation=True, max_length=limit,
                          padding="max_length")
        inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with torch.no_grad():
            out = model(**inputs)  # type: ignore[misc]
        if self.kind == "grounding-dino":
            res = proc.post_process_grounded_object_detection(  # type: ignore[union-attr]
                out, inputs["input_ids"], threshold=self.box_threshold, text_threshold=self.text_threshold,
                target_sizes=[(h, w)])[0]
            labels = res["text_labels"] if "text_labels" in res else res.get("labels", [])
        else:
            # OWLv2 pads images to a square (bottom/right) before predicting: scale by the padded side
            side = (max(h, w), max(h, w)) if self.kind == "owlv2" else (h, w)
            res = proc.post_process_grounded_object_detection(  # type: ignore[union-attr]
                out, threshold=self.box_threshold, target_sizes=[side])[0]
            labels = [phrase] * len(res["scores"])
        from vlamb_nb.boxes import clip

        dets = [Detection(clip(b, w, h), float(s), str(lab))
                for b, s, lab in zip(res["boxes"].tolist(), res["scores"].tolist(), labels, strict=False)]
        return sorted(dets, key=lambda d: -d.score)


def get_grounder(spec: str | Grounder | None = None, **kwargs: Any) -> Grounder:
    """A grounder from an instance, ``"tiny"`` / ``"tiny:owlv2"`` (tiny random detectors), a model id or
    folder, or None (the default detector)."""
    if spec is None:
        return ZeroShotDetector(**kwargs)
    parsed = ModelSpec.parse(spec) if isinstance(spec, str) and spec.strip() else None
    if parsed is not None and parsed.kind == "tiny":
        from vlamb_nb.models.tiny import tiny_detector_path
        from vlamb_nb.paths import tiny_seed

        kind = parsed.name or "grounding-dino"
        det = ZeroShotDetector(tiny_detector_path(kind, seed=tiny_seed()), **kwargs)
        det.name = f"zero-shot:tiny random {kind}"
        return det
    if isinstance(spec, str | os.PathLike):
        return ZeroShotDetector(spec, **kwargs)
    if hasattr(spec, "ground"):
        return spec
    raise SettingError(f"not a grounder: {spec!r}")


def ground_rows(grounder: Grounder, rows, *, image_column: str = "image", text_column: str = "response",
                key_column: str | None = None, loader: Callable[[Any], Any] | None = None,
                progress: bool = True):
    """Ground each row's text in its image; adds ``response_box`` (xyxy or None) and ``ground_score``."""
    from vlamb_nb.images import load_image
    from vlamb_nb.progress import bar

    load = loader or load_image
    boxes, scores = [], []
    cache: dict[Any, Any] = {}
    for _, r in bar(list(rows.iterrows()), enabled=progress, desc=f"ground {grounder.name}"):
        src = r[image_column]
        ck = src if isinstance(src, str) else id(src)
        if ck not in cache:
            cache = {ck: load(src)}  # keep one decoded image: rows of one image are usually adjacent
        dets = grounder.ground(cache[ck], str(r[text_column]), key=str(r[key_column]) if key_column else None)
        b = best_box(dets)
        boxes.append(b)
        scores.append(max((d.score for d in dets), default=None))
    out = rows.copy()
    out["response_box"] = boxes
    out["ground_score"] = scores
    return out
