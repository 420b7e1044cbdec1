"""The items behind every number of a page: one row per item a run answered, each model's answer beside it.

A headline, a slice or a paired test is a number made of items; a reader who doubts it wants to see them. This
module turns run records (:class:`~vlamb_nb.record.RunRecord`: each row and unit set a scoring wrote; a run given
only as a scored frame is read through the record that frame gives) into a compact view model that the pages (:mod:`vlamb_nb.report_html`) embed as one JSON blob and render
in the browser (``templates/_items.html.j2``): per item its image (one small WebP thumbnail per distinct image,
referenced by id, so an image shared by many items is stored once), the prompt (as the run's store recorded it,
the text the model saw; else rebuilt from the item by the paper's own prompt builder; else its prompt column),
each model's answer, its parse, the gold, each declared
metric's per-item value (:mod:`vlamb_nb.stats.metric`) and the item's slices; and *groups*: the exact rows behind
each headline cell (the card's metric, setting and slice), each value of a comparison and each paired test (its
discordant items). A page links a number to its group by what names it, so a click shows exactly those items.

Rows are rendered lazily by the page's script (only the first rows of a filter), so a run of thousands of items
stays fast; all text goes into the page as JSON inside ``<script type="application/json">`` with ``<``, ``>`` and
``&`` escaped, and the script inserts it as text, never as markup.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.errors import reason

#: the longest side of an inlined thumbnail (px) and its WebP quality: about 2-4 kB a photo
THUMB_PX = 96
THUMB_QUALITY = 60
#: the longest text kept per field (a prompt, an answer); the page says when one was cut
MAX_TEXT = 4000
#: rows the page renders at first and per "show more" (the rest stay in the JSON until asked for), fewer where
#: many models make a row wide: about PAGE_CELLS answers drawn at once
PAGE_ROWS = 100
PAGE_CELLS = 400
#: items whose requests are rebuilt at once (their images are decoded, thumbnailed and let go)
CHUNK = 256
PARSED = ("letter", "label_text", "pred_xyxy", "class_name", "pred_label", "judge_label", "answer", "pred", "prediction",
          "parsed")
GOLD = ("gold", "gold_letter", "gold_text", "gold_label", "label_true", "gt_xyxy", "target")
GOLD_BOX = ("gt_xyxy", "gt_box")
PRED_BOX = ("pred_xyxy", "pred_box")
PROMPT = ("prompt", "question", "expression", "claim", "query")
ANSWER = ("text", "response", "output")
#: what a paper's scoring computes per item beside its metric, by the column (or parsed field) that holds it, and
#: what a reader calls it: an opened item shows each (why an answer counts as right or wrong)
WHY = (("parse_error", "parse error"), ("retry_used", "repair turn sent"), ("n_boxes", "boxes in the reply"),
       ("letter", "parsed letter"), ("letter_lenient", "parsed letter (lenient rule)"), ("parse_method", "parse rule"),
       ("parse_rule", "parse rule"), ("refusal", "refusal"), ("label_pred", "predicted label"),
       ("explanation_pred", "the model's explanation"), ("explanation_score", "explanation score"),
       ("explanation_scorer", "explanation scorer"), ("judge_label", "judge's verdict"),
       ("judge_text", "judge's explanation"), ("judge_parse_error", "judge's parse error"), ("judge_model", "judge"),
       ("class_name", "class"), ("labelled", "labelled by"))
#: the label of the IoU an opened grounding item shows (from the gold and the predicted box, as the metric reads it)
IOU = "IoU"
#: how an item's prompt was found (shown with it): its store recorded it, the paper's builder rebuilt it, or only
#: the item's own text is at hand
PROMPT_KINDS = {"r": "The prompt as the run's store recorded it: the text the model saw.",
                "b": "The prompt rebuilt by the paper's prompt builder from the item: the run did not record it.",
                "i": "The item's own text: the prompt the model saw is not at hand (the run did not record it, "
                     "and the items it was asked about are not here to rebuild it)."}


# -- the view model ---------------------------------------------------------------------------------------------
@dataclass
class Group:
    """The rows (indices into :attr:`ItemsView.rows`) behind one number, and what that number counts."""

    label: str
    rows: list[int]
    n: int  # the metric's n: units counted (items, rows, queries, or pairs for a metric over groups)
    unit: str = "item"
    key: tuple[str, ...] = ()  # what names the number on the page (paper, setting, metric, slice[, a, b])
    #: a pair's discordant items: the group of its slice (an index into the view's groups), whose rows where the
    #: two models' values of ``key[2]`` differ are this group's (the page derives them: one list per slice, not
    #: one per pair of 30 models)
    of: int | None = None

    def to_json(self) -> dict[str, Any]:
        from vlamb_nb.findings import plural

        # ``counted``: the n as a page says it ("8 queries", "1 pair"), plural forms written here, not in the script
        return {"label": self.label, "rows": self.rows, "n": self.n, "unit": self.unit,
                "counted": plural(self.n, self.unit)}


@dataclass
class ItemsView:
    """Everything a page's item table needs, for one paper's section or one comparison."""

    models: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)  # labels of the per-item quantities (WHY), in the cells' ``w``
    rules: list[str] = field(default_factory=list)  # how each metric reads an item (a threshold), one line each
    unreleased: list[str] = field(default_factory=list)  # models whose runs keep no reply (released per-item files)
    rows: list[dict[str, Any]] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    slices: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be shown and why (counted, never silent)
    _index: dict[tuple[str, str, str], int] = field(default_factory=dict, repr=False)
    _images: dict[str, int] = field(default_factory=dict, repr=False)
    _keys: dict[tuple[str, ...], int] = field(default_factory=dict, repr=False)
    _values: dict[int, Any] = field(default_factory=dict, repr=False)

    def group_for(self, *key: str) -> int | None:
        """The index of the group named ``key`` (None: no such number has items here); the first of that name."""
        if len(self._keys) != len(self.groups):  # groups were added since: index them again
            self._keys = {}
            for i, g in enumerate(self.groups):
                self._keys.setdefault(g.key, i)
        return self._keys.get(tuple(str(k) for k in key))

    def _group(self, g: Group) -> dict[str, Any]:
        """A group as the page reads it; a pair's discordant items name the two models (``pair``: their
        indices), so the page offers each side of the split."""
        out = g.to_json()
        if len(g.key) == 6 and g.key[4] in self.models and g.key[5] in self.models:
            out["pair"] = [self.models.index(g.key[4]), self.models.index(g.key[5])]
            if g.of is not None and g.key[2] in self.metrics and self._derived(g, *out["pair"]):
                del out["rows"]
                out["of"], out["k"] = g.of, self.metrics.index(g.key[2])
        return out

    def _derived(self, g: Group, a: int, b: int) -> bool:
        """Whether the page derives ``g``'s rows exactly from its slice's rows (``templates/_items.html.j2``,
        ``pairRows``: where the two models' values on the metric differ); else the rows travel as they are."""
        k = self.metrics.index(g.key[2])
        if k not in self._values:  # every row's value of metric k for each model (NaN: none), once a page
            self._values[k] = np.array([[np.nan if c is None or k >= len(c["v"]) or c["v"][k] is None else c["v"][k]
                                         for c in r["m"]] for r in self.rows], dtype=float).reshape(
                len(self.rows), len(self.models))
        base = np.asarray(self.groups[g.of].rows, dtype=int)
        x, y = self._values[k][base, a], self._values[k][base, b]
        gone = np.isnan(x) | np.isnan(y)
        with np.errstate(invalid="ignore"):
            differ = np.where(gone, np.isnan(x) != np.isnan(y), np.abs(x - y) > 1e-8 + 1e-5 * np.abs(y))
        return base[differ].tolist() == list(g.rows)

    def to_json(self) -> dict[str, Any]:
        self._values = {}
        return {"models": self.models, "metrics": self.metrics, "why": self.why, "rules": self.rules,
                "rows": self.rows, "slices": self.slices, "groups": [self._group(g) for g in self.groups],
                "images": self.images, "notes": self.notes, "kinds": PROMPT_KINDS,
                "unreleased": [self.models.index(m) for m in self.unreleased if m in self.models],
                "page": max(10, min(PAGE_ROWS, PAGE_CELLS // max(1, len(self.models))))}


def blob(data: Any) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: no ``<``, ``>``, ``&`` or line
    separators left as they are, so no text of an item can close the script or open markup."""
    import markupsafe

    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(a, b)
    return markupsafe.Markup(text)


# -- cells --------------------------------------------------------------------------------------------------------
def _missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, str | int | list | tuple | dict | bytes):  # the common cells, decided without pandas
        return False
    try:
        import pandas as pd

        r = pd.isna(v)
        return bool(r) if isinstance(r, bool | np.bool_) else False
    except (TypeError, ValueError):
        return False


def rounded(v: Any) -> Any:
    """A number as a reader reads it (nested in lists and dicts too): whole numbers whole, else 1 decimal from 100
    up, 2 from 1, 3 below (a coordinate ``189.60000000000002`` is ``189.6``, an IoU ``0.519``)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, float | int | list | tuple | dict | np.ndarray):
        return v
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, list | tuple):
        return [rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: rounded(x) for k, x in v.items()}
    if isinstance(v, int) or not math.isfinite(v):
        return v
    r = round(v, 1 if abs(v) >= 100 else 2 if abs(v) >= 1 else 3)
    return int(r) if r == int(r) and abs(r) < 1e15 else r


def _text(v: Any) -> str:
    """A cell as short display text (lists and dicts as compact JSON, numbers rounded for reading)."""
    if _missing(v):
        return ""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        return str(rounded(v))
    if isinstance(v, list | tuple | dict | np.ndarray):
        v = rounded(v.tolist() if isinstance(v, np.ndarray) else v)
        try:
            s = json.dumps(v, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            s = str(v)
    else:
        s = str(v)
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + f" … ({len(s) - MAX_TEXT} more characters)"


def _first(row: Any, columns: Sequence[str], names: Sequence[str]) -> Any:
    for c in names:
        if c in columns and not _missing(row.get(c)):
            return row.get(c)
    return None


def _exact_box(v: Any) -> list[float] | None:
    """Four finite numbers (x0, y0, x1, y1) as given, else None."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, list | tuple) and len(v) == 4:
        try:
            b = [float(x) for x in v]
        except (TypeError, ValueError):
            return None
        return b if all(math.isfinite(x) for x in b) else None
    return None


def _box(v: Any) -> list[float] | None:
    """Four finite numbers (x0, y0, x1, y1) to a tenth of a pixel (what the page draws and prints), else None."""
    b = _exact_box(v)
    return None if b is None else [round(x, 1) for x in b]


def _value(v: Any) -> float | int | None:
    """A metric's value on one item: a number to 4 decimals (a whole one as an integer: the page is smaller)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(f):
        return None
    f = round(f, 4)
    return int(f) if f == int(f) and abs(f) < 1e15 else f


# -- images -------------------------------------------------------------------------------------------------------
def thumbnail(src: Any, *, root: Any = None) -> dict[str, Any]:
    """A data URI of ``src`` (path, bytes, ``{"bytes"}``, PIL image) at most :data:`THUMB_PX` on its longest side
    (WebP), with the image's own size as displayed (boxes are drawn in its pixels). A JPEG is decoded at a
    fraction of its size (``draft``), which is most of the time a thumbnail takes."""
    from PIL import Image, ImageOps

    from vlamb_nb.images import read_image_bytes, to_rgb

    if isinstance(src, Image.Image):
        img = src
    else:
        data, _ = read_image_bytes(src, root=root)
        img = Image.open(io.BytesIO(data))
    w, h = img.size
    if img.getexif().get(0x0112) in (5, 6, 7, 8):  # EXIF rotation by a quarter turn: shown the other way round
        w, h = h, w
    if img.format == "JPEG":
        img.draft("RGB", (2 * THUMB_PX, 2 * THUMB_PX))
    img = to_rgb(ImageOps.exif_transpose(img) or img)
    img = img.copy() if img is src else img
    img.thumbnail((THUMB_PX, THUMB_PX))
    buf = io.BytesIO()
    img.save(buf, format="WEBP", quality=THUMB_QUALITY, method=2)
    return {"src": "data:image/webp;base64," + base64.b64encode(buf.getvalue()).decode("ascii"), "w": w, "h": h}


def _image_key(src: Any) -> str:
    """What identifies an image cheaply: a path as given, the bytes' digest, a decoded image's pixels' digest."""
    if isinstance(src, str):
        return "path:" + src
    if isinstance(src, bytes | bytearray | memoryview):
        return "bytes:" + hashlib.sha1(bytes(src)).hexdigest()
    if isinstance(src, dict) and src.get("bytes") is not None:
        return "bytes:" + hashlib.sha1(bytes(src["bytes"])).hexdigest()
    if isinstance(src, dict) and src.get("path"):
        return "path:" + str(src["path"])
    tobytes = getattr(src, "tobytes", None)
    if tobytes is not None:
        return "pixels:" + hashlib.sha1(tobytes()).hexdigest()
    return "other:" + str(id(src))


def _usable(src: Any) -> bool:
    if src is None or (isinstance(src, str) and not src.strip()):
        return False
    return isinstance(src, dict | bytes | str) or hasattr(src, "tobytes") or not _missing(src)


def _add_images(view: ItemsView, entries: list[tuple[str, Any, Any]], failed: list[str]) -> dict[str, int | None]:
    """Per item key, the index of its image's thumbnail in ``view.images`` (None: no image, or one that cannot be
    read: counted in ``failed``); ``entries``: (item key, image, root). An image already seen is not drawn again;
    new ones are drawn on a few threads (PIL decodes and encodes without the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    out: dict[str, int | None] = {}
    todo: dict[str, tuple[Any, Any]] = {}
    keys: dict[str, str] = {}
    for item, src, root in entries:
        if not _usable(src):
            out[item] = None
            continue
        key = _image_key(src)
        keys[item] = key
        if key not in view._images and key not in todo:
            todo[key] = (src, root)
    if todo:
        def draw(job: tuple[Any, Any]) -> dict[str, Any] | str:
            try:
                return thumbnail(job[0], root=job[1])
            except Exception as e:  # noqa: BLE001 - one unreadable image is counted and named, never the page lost
                return reason(e)[:200]

        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            for key, got in zip(todo, pool.map(draw, todo.values()), strict=True):
                if isinstance(got, str):
                    failed.append(got)
                    view._images[key] = -1
                else:
                    view.images.append(got)
                    view._images[key] = len(view.images) - 1
    for item, key in keys.items():
        out[item] = view._images[key] if view._images[key] >= 0 else None
    return out


# -- what a run's items were asked --------------------------------------------------------------------------------
def _asked(view: ItemsView, paper: str, setting: str, items: Any, keys: list[str],
           failed: list[str], recorded: set[str] | None = None) -> dict[str, tuple[str | None, int | None]]:
    """Per item key: the prompt text of the paper's request for the item and its first image's thumbnail,
    rebuilt from the items the run was scored against by the paper's own prompt builder, :data:`CHUNK` items at a
    time (a request may hold decoded images). A chunk that fails is rebuilt item by item: an item whose request
    cannot be built (an image that cannot be read; a setting whose prompt needs an earlier turn's answer) keeps its
    own image column, counted when that fails too; when no request can be built at all the items' own columns
    are shown. Where a prompt is missing (``recorded``: the items whose store recorded theirs) the page says why
    in one plain sentence."""
    if items is None or not keys:
        return {}
    from vlamb_nb.benchmarks import get_benchmark

    bench = get_benchmark(paper)
    idc = bench.id_column
    if idc not in items.columns:
        return {}
    sub = items[items[idc].astype(str).isin(set(keys))].reset_index(drop=True)
    out: dict[str, tuple[str | None, int | None]] = {}
    errors: list[str] = []

    def build(part: Any) -> list[Any] | None:
        try:
            return bench.requests(part.reset_index(drop=True), setting)
        except Exception as e:  # noqa: BLE001 - said on the page, never a lost page
            errors.append(reason(e)[:200])
            return None

    def unsaid(ids: list[str]) -> int:
        return sum(1 for k in ids if k not in (recorded or set()))

    for start in range(0, len(sub), CHUNK):
        part = sub.iloc[start:start + CHUNK]
        reqs = build(part)
        if reqs is None:
            reqs, lost = [], []
            for i in range(len(part)):
                one = build(part.iloc[i:i + 1])
                if one is None:
                    lost.append(part.iloc[i])
                else:
                    reqs += one
            cols = list(part.columns)
            if not reqs:  # no request of the setting can be built from the items: every item's own columns
                lost = [r for _, r in sub.iloc[start:].iterrows()]
            images = _add_images(view, [(str(r[idc]), r["image"] if "image" in cols else None,
                                         r["image_root"] if "image_root" in cols else None) for r in lost], failed)
            out.update({str(r[idc]): (None, images.get(str(r[idc]))) for r in lost})
            if not reqs:
                break
        first: dict[str, Any] = {}
        for r in reqs:
            first.setdefault(r.item_id, r)
        images = _add_images(view, [(k, r.images[0] if r.images else None, None) for k, r in first.items()], failed)
        out.update({k: (r.prompt_text, images[k]) for k, r in first.items()})
    lost_n = unsaid([k for k, (p, _) in out.items() if p is None])
    if lost_n:
        view.notes.append(f"{paper} {setting}: {lost_n} item(s) show their own text, not the prompt the model saw: "
                          "the run did not record it, and it could not be rebuilt for them "
                          f"({max(set(errors), key=errors.count)}).")
    return out


# -- rows ---------------------------------------------------------------------------------------------------------
def _outcome(row: Any, columns: Sequence[str], flags: dict[tuple[bool, int], float | None]) -> int | None:
    """1 right, 0 wrong, None unknown: the row's first 0/1 metric's value (a per-row one before a group's), else
    its ``correct`` column."""
    for _, v in sorted(flags.items()):
        if v is not None:
            return int(v)
    if "correct" in columns and not _missing(row.get("correct")):
        return int(bool(row.get("correct")))
    return None


def turns_of(rec: Any) -> dict[str, list[dict[str, Any]]]:
    """Item id → every turn its run recorded for it, in order (a caption, an agent's steps, a first answer and the
    repair sent after it): the turn's name, the prompt sent, the reply, its failure and whether it is the answer that
    counts; empty for None."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rec.rows if rec is not None else ():
        out.setdefault(str(r.get("item_id")), []).append({
            "turn": str(r.get("turn") or "answer"), "prompt": r.get("prompt") if isinstance(r.get("prompt"), str)
            else None, "answer": r.get("answer"), "failure": r.get("failure"), "scored": r.get("scored", True)})
    return out


def _turns(turns: list[dict[str, Any]] | None) -> list[list[str]] | None:
    """An item's turns for the page (each: name, prompt, reply, failure), where it had more than one."""
    if not turns or len(turns) < 2:
        return None
    return [[t["turn"], _text(t["prompt"]), _text(t["answer"]), _text(t["failure"])] for t in turns]


def _why(view: ItemsView, metrics: Sequence[Any], fields: Any, gold_box: Any, pred_box: Any) -> list[Any] | None:
    """The per-item quantities behind an item's outcome, aligned with ``view.why`` (None where absent): the IoU of
    the predicted box with the gold one where a metric reads an IoU (a reply with no box: 0, as the metric counts
    it), then each :data:`WHY` field ``fields`` (a scored row, or a record row's parse) holds; rounded for reading."""
    from vlamb_nb.boxes import iou

    got: dict[str, Any] = {}
    gold_box, pred_box = _exact_box(gold_box), _exact_box(pred_box)
    if gold_box is not None and any(getattr(m, "column", "") == "iou" for m in metrics):
        got[IOU] = rounded(float(iou(gold_box, pred_box))) if pred_box is not None else 0
    for col, label in WHY:
        v = fields.get(col) if hasattr(fields, "get") else None
        if label in got:
            continue
        if _missing(v) or (isinstance(v, str) and not v.strip()):
            if col == "parse_error" and hasattr(fields, "get") and col in fields and label not in view.why:
                view.why.append(label)  # the parse can fail here: an item without an error says "none"
            continue
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, bool) and not v:
            continue  # a flag not raised (no repair turn, no refusal): said by its absence
        got[label] = rounded(v) if isinstance(v, float | int) and not isinstance(v, bool) else \
            "yes" if isinstance(v, bool) else _text(v)
    if not got:
        return None
    for label in got:
        if label not in view.why:
            view.why.append(label)
    out: list[Any] = [None] * len(view.why)
    for label, v in got.items():
        out[view.why.index(label)] = v
    return out


def _rules(view: ItemsView, metrics: Sequence[Any]) -> None:
    """How each metric reads one item, where a threshold decides it (Acc@0.5: right when the IoU is at least
    0.5), one line each, once per page."""
    for m in metrics:
        line = m.threshold_rule(IOU if m.column == "iou" else str(m.column))
        if line is not None and line not in view.rules:
            view.rules.append(line)


def _model_cell(view: ItemsView, metrics: Sequence[Any], *, answer: Any, error: Any, parse: Any, pred: Any,
                ok: int | None, values: list[float | None], fields: Any, gold: Any,
                turns: list[dict[str, Any]] | None, prompt: str | None, row_prompt: str) -> dict[str, Any]:
    """One model's answer to one item as the page keeps it: the reply (a released file's runs keep none:
    ``ItemsView.unreleased``), its failure,
    the parse, the predicted box, the outcome, each metric's value, why (:func:`_why`), its turns and, where it
    differs from the item's, the prompt this model saw. Empty fields are left out (the page is smaller)."""
    pred_box = _box(pred)
    cell: dict[str, Any] = {"pb": pred_box, "ok": ok, "v": values}
    if (a := _text(answer)):
        cell["a"] = a
    if (e := _text(error)):
        cell["e"] = e
    x = _text(parse)
    if x and not (pred_box is not None and _exact_box(parse) is not None and _box(parse) == pred_box):
        cell["x"] = x  # the parse, where it is more than the predicted box the page draws
    if (w := _why(view, metrics, fields, gold, pred)) is not None:
        cell["w"] = w
    if (t := _turns(turns)) is not None:
        cell["t"] = t
    if prompt and _text(prompt) != row_prompt:
        cell["q"] = _text(prompt)
    return cell


def _ensure(view: ItemsView, models: Sequence[str], metrics: Sequence[Any]) -> None:
    for m in models:
        if m not in view.models:
            view.models.append(m)
            for r in view.rows:
                r["m"].append(None)
    for m in metrics:
        if m.name not in view.metrics:
            view.metrics.append(m.name)
            for r in view.rows:
                for mv in r["m"]:
                    if mv is not None:
                        mv["v"].append(None)


def _close(view: ItemsView, failed_images: list[str]) -> ItemsView:
    if failed_images:
        top = max(set(failed_images), key=failed_images.count)
        view.notes.append(f"{len(failed_images)} image(s) could not be read and show no thumbnail (most often: "
                          f"{top}).")
    view._index.clear()
    view._images.clear()
    return view


# -- a run's page: one paper's runs, one model --------------------------------------------------------------------
def paper_view(paper: str, runs: Sequence[Any]) -> ItemsView:
    """The items of one paper's runs (``compare.Run``-like: ``model``, ``setting``, ``record``, ``items``), with a
    group per card row: the rows of each card metric, setting and slice, named as the card names them, and per
    metric its whole set. Read from each run's record, so the page shows what the run recorded, never a second
    scoring."""
    from vlamb_nb.benchmarks import get_benchmark

    metrics = list(get_benchmark(paper).metrics)
    view = ItemsView()
    failed: list[str] = []
    _ensure(view, list(dict.fromkeys(r.model for r in runs)), metrics)
    for run in runs:
        if run.record is None:  # compare.with_record gives a run given as a frame its record
            view.notes.append(f"{paper} {run.setting}: {run.model}'s items are not listed: it came with no run record")
            continue
        _record_groups(view, paper, run, metrics, _record_rows(view, paper, run.setting, metrics, [run.model],
                                                               [run], None, failed))
    return _close(view, failed)


def _store_group(view: ItemsView, m: Any, setting: str) -> int | None:
    """The group of the metric's whole set in a run of ``setting``: the card's row of it, where the card names
    that run so, else the group keyed by the metric's own name of the whole set."""
    card = m.card
    if card is not None and not card.setting and (not card.settings or setting in card.settings):
        g = view.group_for(setting, m.name, card.slice.format(slice=m.overall, setting=setting,
                                                              SETTING=setting.upper()))
        if g is not None:
            return g
    return view.group_for(setting, m.name, m.overall)


def score_links(view: ItemsView | None, paper: str, rows: Sequence[dict[str, Any]]) -> list[int | None]:
    """For each row of a paper's store scores (``setting``, ``metric``: :func:`vlamb_nb.run_view` rows), the group
    of the items its value is made of (None: not listed here)."""
    from vlamb_nb.benchmarks import get_benchmark

    if view is None:
        return [None] * len(rows)
    metrics = {m.name: m for m in get_benchmark(paper).metrics}
    return [_store_group(view, metrics[str(r.get("metric"))], str(r.get("setting")))
            if str(r.get("metric")) in metrics else None for r in rows]


def run_views(runs: Sequence[Any]) -> dict[str, ItemsView]:
    """One :func:`paper_view` per paper the runs cover."""
    by_paper: dict[str, list[Any]] = {}
    for r in runs:
        by_paper.setdefault(r.paper, []).append(r)
    return {p: paper_view(p, rs) for p, rs in by_paper.items()}


def headline_links(view: ItemsView | None, rows: Sequence[dict[str, Any]]) -> list[int | None]:
    """For each card row of a paper's section (``setting``, ``metric``, ``slice`` as the card shows them), the
    group of its items (None: the row has no items here)."""
    if view is None:
        return [None] * len(rows)
    return [view.group_for(str(r.get("setting")), str(r.get("metric")), str(r.get("slice"))) for r in rows]


# -- a comparison's page ------------------------------------------------------------------------------------------
def comparison_view(c: Any) -> ItemsView:
    """The items a comparison compared (``c.aligned``: each paper, setting and metric group's per-unit values on the
    common items, by unit key), a row per item from each run's record (a run given as a scored frame: the record
    it gives), a group per value row (its metric and slice) and per pair (its discordant items: where the two
    models' per-unit values differ)."""
    view = ItemsView()
    failed: list[str] = []
    for entry in getattr(c, "aligned", None) or []:
        _unit_entry(view, c, entry, failed)
    return _close(view, failed)


def _run_rows(paper: str, run: Any) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]], Any]:
    """A run's scored rows by their key in the unit sets, each slice's keys, and its record."""
    rec = run.record
    rows = rec.keyed_rows()
    slices: dict[str, set[str]] = {}
    for sets in rec.units.values():
        for u in sets or ():
            if not u.whole:
                slices.setdefault(u.slice, set()).update(_unit_items(u.keys, u.members))
    return rows, slices, rec


def _ask(runs: Sequence[Any]) -> str | None:
    """The setting a comparison's first run was asked in, where its runs are one model's settings (an ablation)."""
    return getattr(runs[0], "asked", None) if runs else None


def _ablation_note(view: ItemsView, paper: str, setting: str, runs: Sequence[Any]) -> None:
    asked = [getattr(r, "asked", None) for r in runs]
    if len(set(asked)) > 1:
        view.notes.append(f"{paper} {setting}: each setting asked its own prompt; the prompt shown is the "
                          f"{asked[0]} run's")


def _unit_items(keys: Sequence[str], members: Sequence[Sequence[str]] | None) -> list[str]:
    """The item keys of units (a metric over groups: each group's items)."""
    return [k for ks in members for k in ks] if members is not None else list(keys)


def _record_rows(view: ItemsView, paper: str, setting: str, metrics: Sequence[Any], names: Sequence[str],
                 runs: Sequence[Any], keys: Sequence[str] | None, failed: list[str]) -> dict[str, int]:
    """Rows from each run's record (the prompt the store recorded, the answer, the parse, the gold, each turn,
    each metric's per-item value), for ``keys`` (None: every row of the first run), in order; returns row index by
    key. A record's image names are never read from disk (a record may come from anywhere, and the page would
    carry the files it names): images come from the items a run was scored against, where they are at hand."""
    _ensure(view, names, metrics)
    _rules(view, metrics)
    tables = [_run_rows(paper, r) for r in runs]
    if keys is None:
        keys = list(tables[0][0]) if tables else []
    items = next((r.items for r in runs if getattr(r, "items", None) is not None), None)
    _ablation_note(view, paper, setting, list(runs))
    for name, run in zip(names, runs, strict=True):
        if getattr(run, "released", False) and name not in view.unreleased:
            view.unreleased.append(name)  # a paper's released per-item file: no reply, no prompt kept
    released = any(getattr(r, "released", False) for r in runs)
    turns = [turns_of(rec) for _, _, rec in tables]
    said = {k for k in keys if any(str(rows[k].get("item_id")) in t and rows[k].get("prompt")
                                   for (rows, _, _), t in zip(tables[:1], turns[:1], strict=True) if k in rows)}
    asked = _asked(view, paper, _ask(list(runs)) or setting, items, list(keys), failed, said) \
        if items is not None else {}
    no_image = 0
    index: dict[str, int] = {}
    by_item = _item_slices(paper, items, metrics)
    own = _own_text(paper, items)
    for key in keys:
        first = next((rows[key] for rows, _, _ in tables if key in rows), None)
        if first is None:
            continue
        ident = (paper, setting, key)
        prompt, img = asked.get(key, (None, None))
        no_image += img is None
        recorded = first.get("prompt") if isinstance(first.get("prompt"), str) and first.get("prompt") else None
        shown, kind = (recorded, "r") if recorded else (prompt, "b") if prompt is not None else \
            (own.get(str(first.get("item_id")), ""), "i")
        slices = next(sl for rows, sl, _ in tables if key in rows)
        inside = {n for n, ks in slices.items() if key in ks} | by_item.get(str(first.get("item_id")), set())
        for n in [*slices, *sorted(inside - set(slices))]:
            if n in inside and n not in view.slices:
                view.slices.append(n)
        sl = sorted(view.slices.index(n) for n in inside)
        if ident not in view._index:
            view.rows.append({"k": key, "p": paper, "s": setting, "i": img, "q": _text(shown), "qk": kind,
                              "g": _text(first.get("gold")), "gb": _box(first.get("gold")), "sl": sl,
                              "m": [None] * len(view.models)})
            view._index[ident] = len(view.rows) - 1
        index[key] = view._index[ident]
        r = view.rows[index[key]]
        for name, (rows, _, _), mturns in zip(names, tables, turns, strict=True):
            row = rows.get(key)
            if row is None:
                continue
            parsed = row.get("parsed") if isinstance(row.get("parsed"), dict) else {}
            fields = {**parsed, **(row.get("details") if isinstance(row.get("details"), dict) else {})}
            flags: dict[tuple[bool, int], float | None] = {}
            for m in metrics:
                if m.zero_one and m.name in row:  # a row's own 0/1 value first, a group's (a pair) after
                    flags[(m.grouped, len(flags))] = _value(row.get(m.name))
            mine = mturns.get(str(row.get("item_id")))
            r["m"][view.models.index(name)] = _model_cell(
                view, metrics, answer=row.get("answer"), error=_request_error(row, parsed),
                parse=_first(parsed, list(parsed), PARSED), pred=_first(parsed, list(parsed), PRED_BOX),
                ok=_outcome(row, list(row), flags), values=[_value(row.get(n)) for n in view.metrics],
                fields=fields, gold=row.get("gold"), turns=mine,
                prompt=row.get("prompt") if isinstance(row.get("prompt"), str) else None, row_prompt=r["q"])
    if no_image and released:
        why = "the released per-item files keep no images" if items is None else \
            "the data given for them holds only some"
        view.notes.append(f"{paper} {setting}: {no_image} item(s) show no image: {why}. "
                          f"{_image_hint(paper, runs, released=True)}")
    elif no_image and items is None:  # with the items at hand, an item without an image was asked without one
        view.notes.append(f"{paper} {setting}: {no_image} item(s) show no image: a run record names its images "
                          f"(their paths in the data), it does not hold them. {_image_hint(paper, runs)}")
    return index


def _item_slices(paper: str, items: Any, metrics: Sequence[Any]) -> dict[str, set[str]]:
    """Per item id, the declared slices its data puts it in (a setting whose metric is not scored, such as a
    free-form answer awaiting its judge, has no unit sets to say so); empty without the items."""
    if items is None:
        return {}
    from vlamb_nb.benchmarks import get_benchmark

    idc = get_benchmark(paper).id_column
    if idc not in getattr(items, "columns", ()):
        return {}
    ids = items[idc].astype(str).to_numpy()
    out: dict[str, set[str]] = {}
    for m in metrics:
        if m.slices is None:
            continue
        try:
            masks = m.slice_masks(items)
        except Exception:  # noqa: BLE001 - a slice read from scored columns: the unit sets say it
            continue
        for name, mask in masks:
            for i in ids[np.asarray(mask, dtype=bool)]:
                out.setdefault(str(i), set()).add(name)
    return out


def _own_text(paper: str, items: Any) -> dict[str, str]:
    """Per item id, the item's own text (its question or expression): what a row shows where the run recorded no
    prompt and none can be rebuilt; empty without the items."""
    if items is None:
        return {}
    from vlamb_nb.benchmarks import get_benchmark

    idc, cols = get_benchmark(paper).id_column, list(getattr(items, "columns", ()))
    if idc not in cols:
        return {}
    texts = [c for c in PROMPT if c in cols and c != idc]
    return {str(r[idc]): _text(_first(r, texts, PROMPT)) for r in items[[idc, *texts]].to_dict(orient="records")}


def _request_error(row: dict[str, Any], parsed: dict[str, Any]) -> str | None:
    """A record row's failure where its request failed; a reply that did not parse is no error (its parse error
    is said among the reasons for its outcome, as on a scored row)."""
    failure = row.get("failure")
    pe = parsed.get("parse_error")
    if isinstance(failure, str) and isinstance(pe, str) and pe.strip() and \
            failure == pe.strip().splitlines()[0][:240]:
        return None
    return failure


def _image_hint(paper: str, runs: Sequence[Any], *, released: bool = False) -> str:
    """One line naming the data that would bring a run's images: for a paper's released per-item files, the
    paper's release (``vlamb-nb data fetch``) or data given with ``--source``; else the data the run's record says
    it stood on."""
    if released:
        return (f"The paper's release holds every item's image: `vlamb-nb data fetch {paper}`, then compare again "
                f"(or give the items with --source {paper}=PATH).")
    data = next((r.data for r in runs if getattr(r, "data", None)), None) or {}
    what = str(data.get("label") or data.get("release") or "the data it was run on")
    return (f"They are in {what}: compare the stores with that data beside them (--source {paper}=PATH), "
            f"or fetch the paper's release (`vlamb-nb data fetch {paper}`) where the run stood on it.")


def _record_groups(view: ItemsView, paper: str, run: Any, metrics: Sequence[Any], index: dict[str, int]) -> None:
    """The groups of a run given as its record, on a run's page: each card row's items (the metric, setting and
    slice as the card names them) and each metric's whole set, from the record's unit sets."""
    from vlamb_nb.stats.metric import card_units

    rec = run.record
    for m in metrics:
        try:
            sets = rec.unit_sets(m.name) or []
        except Exception:  # noqa: BLE001 - a record without this metric's units has no group of it
            continue
        if not sets:
            continue
        rows_of = {id(u): sorted({index[k] for k in _unit_items(u.keys, u.members) if k in index}) for u in sets}
        if m.card is not None and (not m.card.settings or run.setting in m.card.settings):
            setting = m.card.setting or run.setting
            for u in card_units(m, sets):
                label = m.card.slice.format(slice=u.slice, setting=setting, SETTING=setting.upper())
                view.groups.append(Group(f"{m.name} · {setting} · {label}", rows_of[id(u)], len(u.keys), m.unit,
                                         (setting, m.name, label)))
        if _store_group(view, m, run.setting) is None:
            whole = next((u for u in sets if u.whole), None)
            if whole is not None:
                view.groups.append(Group(f"{m.name} · {run.setting} · {m.overall}", rows_of[id(whole)],
                                         len(whole.keys), m.unit, (run.setting, m.name, m.overall)))


def _unit_entry(view: ItemsView, c: Any, entry: dict[str, Any], failed: list[str]) -> None:
    """One paper and setting compared from unit sets: a row per common item from each run's record rows
    (:func:`_record_rows`), a group per value (its units' items) and per pair (the items of the units where the
    two differ)."""
    paper, setting, metrics, names, scores = (entry["paper"], entry["setting"], entry["metrics"], entry["models"],
                                              entry["scores"])
    runs = list(entry["runs"])
    keys = list(dict.fromkeys(k for m in metrics for sc in scores.get(m.name, ())[:1]  # the whole set first
                              for k in _unit_items(sc.keys, sc.members)))
    index = _record_rows(view, paper, setting, metrics, names, runs, keys, failed)
    for m in metrics:
        for sc in scores.get(m.name, ()):
            if not len(sc.keys):  # a slice none of the common items falls in: no value, no group
                continue
            rows_of = sorted({index[k] for k in _unit_items(sc.keys, sc.members) if k in index})
            view.groups.append(Group(f"{paper} · {setting} · {m.name} · {sc.slice}", rows_of, len(sc.keys), m.unit,
                                     (paper, setting, m.name, str(sc.slice))))
            of = len(view.groups) - 1
            for a, b in _pairs(c, names):
                va, vb = sc.values[names.index(a)], sc.values[names.index(b)]
                differ = ~np.isclose(np.asarray(va, float), np.asarray(vb, float), equal_nan=True)
                at = np.flatnonzero(differ).tolist()
                members = None if sc.members is None else [sc.members[i] for i in at]
                view.groups.append(Group(
                    _pair_label(paper, setting, m.name, sc.slice, a, b, va, vb), sorted(
                        {index[k] for k in _unit_items([sc.keys[i] for i in at], members) if k in index}),
                    len(at), m.unit, (paper, setting, m.name, str(sc.slice), a, b), of))


def _pair_label(paper: str, setting: str, metric: str, sl: str, a: str, b: str, va: Any, vb: Any) -> str:
    """A pair's discordant items, named with McNemar's split where the values are 0/1: how many only a has
    right and how many only b has right."""
    va, vb = np.asarray(va, float), np.asarray(vb, float)
    label = f"{paper} · {setting} · {metric} · {sl}: {a} and {b} disagree"
    ones = np.isin(va[~np.isnan(va)], (0.0, 1.0)).all() and np.isin(vb[~np.isnan(vb)], (0.0, 1.0)).all()
    if ones and len(va):
        label += f" ({int(((va == 1) & (vb == 0)).sum())} only {a} right, {int(((va == 0) & (vb == 1)).sum())} " \
                 f"only {b} right)"
    return label


def _pairs(c: Any, names: list[str]) -> list[tuple[str, str]]:
    import itertools

    base = getattr(c, "baseline", None)
    if base is not None and base in names:
        return [(m, base) for m in names if m != base]
    return list(itertools.combinations(names, 2))


def comparison_links(view: ItemsView | None, c: Any) -> dict[str, list[int | None]]:
    """The group of each row of the comparison's values and pairs tables, in the tables' order."""
    if view is None:
        return {"values": [], "pairs": []}
    values = [view.group_for(r["paper"], r["setting"], r["metric"], r["slice"])
              for r in c.values.to_dict(orient="records")]
    pairs = [view.group_for(r["paper"], r["setting"], r["metric"], r["slice"], r["model_a"], r["model_b"])
             for r in (c.pairs.to_dict(orient="records") if len(c.pairs) else [])]
    return {"values": values, "pairs": pairs}


def slice_links(view: ItemsView | None, tables: Sequence[dict[str, Any]]) -> dict[str, list[list[int | None]]]:
    """The group of each cell of the comparison's per-slice tables (``slices-<k>``, in the order
    :func:`vlamb_nb.compare.slice_tables` gives them): a model's value on a slice opens that slice's items."""
    if view is None:
        return {}
    out = {}
    for k, t in enumerate(tables, 1):
        groups = [view.group_for(t["paper"], t["setting"], t["metric"], sl) for sl in t["slices"]]
        out[f"slices-{k}"] = [[None, *groups] for _ in t["rows"]]
    return out
