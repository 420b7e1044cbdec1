"""The items behind every number of a page: one row per item a run answered, each model's answer beside it.

A headline, a slice or a paired test is a number made of items; a reader who doubts it wants to see them. This
module turns scored runs (each paper's scored frame, the one :meth:`~vlamb_nb.benchmarks.base.Benchmark.score_store`
gives) into a compact view model that the pages (:mod:`vlamb_nb.report_html`) embed as one JSON blob and render
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
from pathlib import Path
from typing import Any

import numpy as np

#: the longest side of an inlined thumbnail (px) and its WebP quality: about 2-4 kB a photo
THUMB_PX = 96
THUMB_QUALITY = 60
#: the longest text kept per field (a prompt, an answer); the page says when one was cut
MAX_TEXT = 4000
#: rows the page renders at first and per "show more" (the rest stay in the JSON until asked for)
PAGE_ROWS = 100
#: items whose requests are rebuilt at once (their images are decoded, thumbnailed and let go)
CHUNK = 256
PARSED = ("letter", "label_text", "pred_xyxy", "class_name", "pred_label", "judge_label", "answer", "pred", "prediction",
          "parsed")
GOLD = ("gold", "gold_letter", "gold_text", "gold_label", "label_true", "gt_xyxy", "target")
GOLD_BOX = ("gt_xyxy", "gt_box")
PRED_BOX = ("pred_xyxy", "pred_box")
PROMPT = ("prompt", "question", "expression", "claim", "query")
ANSWER = ("text", "response", "output")


# -- the view model ---------------------------------------------------------------------------------------------
@dataclass
class Group:
    """The rows (indices into :attr:`ItemsView.rows`) behind one number, and what that number counts."""

    label: str
    rows: list[int]
    n: int  # the metric's n: units counted (items, rows, queries, or pairs for a metric over groups)
    unit: str = "item"
    key: tuple[str, ...] = ()  # what names the number on the page (paper, setting, metric, slice[, a, b])

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
    rows: list[dict[str, Any]] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    slices: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be shown and why (counted, never silent)
    _index: dict[tuple[str, str, str], int] = field(default_factory=dict, repr=False)
    _images: dict[str, int] = field(default_factory=dict, repr=False)

    def group_for(self, *key: str) -> int | None:
        """The index of the group named ``key`` (None: no such number has items here)."""
        return next((i for i, g in enumerate(self.groups) if g.key == tuple(str(k) for k in key)), None)

    def to_json(self) -> dict[str, Any]:
        return {"models": self.models, "metrics": self.metrics, "rows": self.rows, "slices": self.slices,
                "groups": [g.to_json() for g in self.groups], "images": self.images, "notes": self.notes,
                "page": PAGE_ROWS}


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
    if isinstance(v, float) and math.isnan(v):
        return True
    try:
        import pandas as pd

        r = pd.isna(v)
        return bool(r) if isinstance(r, bool | np.bool_) else False
    except (TypeError, ValueError):
        return False


def _text(v: Any) -> str:
    """A cell as short display text (lists and dicts as compact JSON, numbers rounded)."""
    if _missing(v):
        return ""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list | tuple | dict | np.ndarray):
        v = v.tolist() if isinstance(v, np.ndarray) else v
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


def _box(v: Any) -> list[float] | None:
    """Four finite numbers (x0, y0, x1, y1), else None."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, list | tuple) and len(v) == 4:
        try:
            b = [float(x) for x in v]
        except (TypeError, ValueError):
            return None
        return [round(x, 1) for x in b] if all(math.isfinite(x) for x in b) else None
    return None


def _value(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return round(f, 4) if math.isfinite(f) else None


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
                return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"

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
           failed: list[str]) -> dict[str, tuple[str | None, int | None]]:
    """Per item key: the prompt text of the paper's request for the item and its first image's thumbnail,
    rebuilt from the items the run was scored against by the paper's own prompt builder, :data:`CHUNK` items at a
    time (a request may hold decoded images). A chunk that fails is rebuilt item by item: an item whose request
    cannot be built (an image that cannot be read) keeps its own image column, counted when that fails too; when
    no request can be built at all the page says so and shows the items' columns."""
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
            errors.append(f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
            return None

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
            if not reqs:
                view.notes.append(f"{paper} {setting}: the prompts could not be rebuilt ({errors[-1]}); the items' "
                                  "own columns are shown")
                return {}
            cols = list(part.columns)
            images = _add_images(view, [(str(r[idc]), r["image"] if "image" in cols else None,
                                         r["image_root"] if "image_root" in cols else None) for r in lost], failed)
            out.update({str(r[idc]): (None, images.get(str(r[idc]))) for r in lost})
        first: dict[str, Any] = {}
        for r in reqs:
            first.setdefault(r.item_id, r)
        images = _add_images(view, [(k, r.images[0] if r.images else None, None) for k, r in first.items()], failed)
        out.update({k: (r.prompt_text, images[k]) for k, r in first.items()})
    lost_n = sum(1 for p, _ in out.values() if p is None)
    if lost_n:
        view.notes.append(f"{paper} {setting}: {lost_n} item(s) whose request could not be rebuilt show their own "
                          f"columns (most often: {max(set(errors), key=errors.count)})")
    return out


# -- rows ---------------------------------------------------------------------------------------------------------
def _per_row(metric: Any, rows: Any) -> Any:
    """The metric's value on each row it covers (a metric over groups: its group's value), indexed like ``rows``."""
    import pandas as pd

    units = metric.units(rows)
    if metric.kind == "all_correct":
        return pd.Series(units.reindex(rows[metric.group].astype(str).to_numpy()).to_numpy(), index=rows.index)
    return units


def _outcome(row: Any, columns: Sequence[str], flags: dict[tuple[bool, int], float | None]) -> int | None:
    """1 right, 0 wrong, None unknown: the row's first 0/1 metric's value (a per-row one before a group's), else
    its ``correct`` column."""
    for _, v in sorted(flags.items()):
        if v is not None:
            return int(v)
    if "correct" in columns and not _missing(row.get("correct")):
        return int(bool(row.get("correct")))
    return None


def recorded_prompts(run: Any) -> dict[str, str]:
    """Item id → the prompt its answer was asked with, as the run's store recorded it (its run record beside the
    store): the text the model saw, whatever options the run used. Empty when the run has no readable record."""
    from vlamb_nb.errors import DataError
    from vlamb_nb.record import RunRecord

    origin = getattr(run, "origin", "") or ""
    if not origin or not Path(origin).is_file():
        return {}
    try:
        rec = RunRecord.read(origin)
    except (DataError, OSError):
        return {}
    return {str(r.get("item_id")): r["prompt"] for r in rec.rows  # the answer that counts (a repair's, if any)
            if r.get("scored", True) and isinstance(r.get("prompt"), str) and r["prompt"]}


def _add_rows(view: ItemsView, paper: str, setting: str, metrics: list[Any], model_frames: list[tuple[str, Any]],
              items: Any, failed_images: list[str], recorded: dict[str, str] | None = None,
              ask: str | None = None) -> dict[str, int]:
    """Rows of one paper and setting, each model's answers beside them; returns row index by item key. An item's
    prompt is the one its first model's store recorded (``recorded``, by item id), else the one the paper's
    prompt builder gives for the item, else its prompt column."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.stats.metric import ZERO_ONE

    key_metric = metrics[0] if metrics else None
    out: dict[str, int] = {}
    first = model_frames[0][1]
    keys = (key_metric.item_key(first) if key_metric is not None else first.index.astype(str)).tolist()
    asked = _asked(view, paper, ask or setting, items, list(dict.fromkeys(keys)), failed_images)
    cols = list(first.columns)
    idc = get_benchmark(paper).id_column
    for model, frame in model_frames:
        k = view.models.index(model)
        frame_keys = key_metric.item_key(frame).tolist() if key_metric is not None else frame.index.astype(str).tolist()
        values: dict[str, Any] = {}
        for m in metrics:
            try:
                covered = m.rows(frame)
                if m.has_values(covered):
                    values[m.name] = _per_row(m, covered)
            except Exception:  # noqa: BLE001 - a metric without its columns here has no per-item value
                continue
        fcols = list(frame.columns)
        row_slices = _slices_by_row(view, frame, metrics)
        if "image" in fcols:  # items the paper's requests did not give: the image their rows name
            rest = [(str(key), img, root) for key, img, root in zip(
                frame_keys, frame["image"], frame["image_root"] if "image_root" in fcols else [None] * len(frame),
                strict=True) if str(key) not in asked and (paper, setting, str(key)) not in view._index]
            drawn = _add_images(view, [(key, img, None if _missing(root) else root) for key, img, root in rest],
                                failed_images)
        else:
            drawn = {}
        for pos, (idx, row) in enumerate(frame.iterrows()):
            rk = str(frame_keys[pos])
            ident = (paper, setting, rk)
            if ident not in view._index:
                prompt, img = asked.get(rk, (None, drawn.get(rk)))
                img = img if img is not None else drawn.get(rk)
                if recorded and idc in fcols and str(row[idc]) in recorded:
                    prompt = recorded[str(row[idc])]  # what the model was asked, as its store recorded it
                if prompt is None:
                    prompt = _text(_first(row, cols, PROMPT))
                view.rows.append({"k": rk, "p": paper, "s": setting, "i": img, "q": _text(prompt),
                                  "g": _text(_first(row, fcols, GOLD)), "gb": _box(_first(row, fcols, GOLD_BOX)),
                                  "sl": row_slices.get(pos, []), "m": [None] * len(view.models)})
                view._index[ident] = len(view.rows) - 1
            r = view.rows[view._index[ident]]
            flags: dict[tuple[bool, int], float | None] = {}
            mvals: dict[str, float | None] = {}
            for name, series in values.items():
                if idx in series.index:
                    v = _value(series.get(idx))
                    mvals[name] = v
                    m = next(mm for mm in metrics if mm.name == name)
                    if m.kind in ZERO_ONE:  # a row's own 0/1 value first, a group's (a pair) after
                        flags[(m.kind != "binary", len(flags))] = v
            error = _text(row.get("error")) if "error" in fcols else ""
            r["m"][k] = {"a": _text(_first(row, fcols, ANSWER)), "e": error,
                         "x": _text(_first(row, fcols, PARSED)), "pb": _box(_first(row, fcols, PRED_BOX)),
                         "ok": _outcome(row, fcols, flags),
                         "v": [mvals.get(n) for n in view.metrics]}
            out[rk] = view._index[ident]
    return out


def _slices_by_row(view: ItemsView, frame: Any, metrics: Sequence[Any]) -> dict[int, list[int]]:
    """Per row position, the indices (into ``view.slices``) of the declared slices it falls in."""
    out: dict[int, list[int]] = {}
    for m in metrics:
        if m.slices is None:
            continue
        try:
            masks = m.slice_masks(frame)
        except Exception:  # noqa: BLE001 - a slice whose columns this frame lacks: no slice to filter by
            continue
        for name, mask in masks:
            if name not in view.slices:
                view.slices.append(name)
            j = view.slices.index(name)
            for pos in np.flatnonzero(np.asarray(mask, dtype=bool)).tolist():
                if j not in out.setdefault(pos, []):
                    out[pos].append(j)
    return out


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


def _rows_of(frame: Any, mask: Any, metric: Any, index: dict[str, int]) -> list[int]:
    keys = metric.item_key(frame[np.asarray(mask, dtype=bool)]).tolist()
    return sorted({index[k] for k in keys if k in index})


def _close(view: ItemsView, failed_images: list[str]) -> ItemsView:
    if failed_images:
        top = max(set(failed_images), key=failed_images.count)
        view.notes.append(f"{len(failed_images)} image(s) could not be read and show no thumbnail (most often: {top})")
    view._index.clear()
    view._images.clear()
    return view


# -- a run's page: one paper's runs, one model --------------------------------------------------------------------
def paper_view(paper: str, runs: Sequence[Any]) -> ItemsView:
    """The items of one paper's runs (``compare.Run``-like: ``model``, ``setting``, ``scored``, ``items``), with a
    group per card row: the rows of each card metric, setting and slice, named as the card names them."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.stats.metric import card_slices

    metrics = list(get_benchmark(paper).metrics)
    view = ItemsView()
    failed: list[str] = []
    _ensure(view, list(dict.fromkeys(r.model for r in runs)), metrics)
    for run in runs:
        frame = run.scored
        if frame is None or not len(frame):
            continue
        index = _add_rows(view, paper, run.setting, metrics, [(run.model, frame)], getattr(run, "items", None), failed,
                          recorded_prompts(run))
        for m in metrics:
            if m.card is None:
                continue
            keys = m.card.settings or (run.setting,)
            if run.setting not in keys:
                continue
            setting = m.card.setting or run.setting
            rows = m.rows(frame)
            if rows.empty or not m.has_values(rows):
                continue
            for name, mask in card_slices(m, rows):
                label = m.card.slice.format(slice=name, setting=setting, SETTING=setting.upper())
                n = int(len(m.units(rows[mask])))
                if not n:
                    continue
                view.groups.append(Group(f"{m.name} · {setting} · {label}", _rows_of(rows, mask, m, index), n,
                                         m.unit, (setting, m.name, label)))
        for m in metrics:  # every declared metric's whole set of the run (a store's scores row), once
            if _store_group(view, m, run.setting) is not None:
                continue
            rows = m.rows(frame)
            if rows.empty or not m.has_values(rows):
                continue
            every = np.ones(len(rows), dtype=bool)
            view.groups.append(Group(f"{m.name} · {run.setting} · {m.overall}", _rows_of(rows, every, m, index),
                                     int(len(m.units(rows))), m.unit, (run.setting, m.name, m.overall)))
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
    """The items a comparison compared (``c.aligned``: each paper, setting and metric group's common items, every
    model's rows in one order), a group per value row (its metric and slice) and per pair (its discordant
    items: where the two models' per-unit values differ)."""
    view = ItemsView()
    failed: list[str] = []
    for entry in getattr(c, "aligned", None) or []:
        if "scores" in entry:  # compared from unit sets (a run given as its record)
            _unit_entry(view, c, entry, failed)
            continue
        paper, setting, metrics, names, frames = (entry["paper"], entry["setting"], entry["metrics"], entry["models"],
                                                 entry["frames"])
        _ensure(view, names, metrics)
        items = next((getattr(r, "items", None) for r in entry.get("runs") or [] if getattr(r, "items", None)
                      is not None), None)
        runs = list(entry.get("runs") or [])
        _ablation_note(view, paper, setting, runs)
        index = _add_rows(view, paper, setting, metrics, list(zip(names, frames, strict=True)), items, failed,
                          recorded_prompts(runs[0]) if runs else None, _ask(runs))
        first = frames[0]
        for m in metrics:
            masks = [(m.overall, np.ones(len(first), dtype=bool))]
            if m.compare_slices:
                masks += m.slice_masks(first)
            for sl, mask in masks:
                part = first[mask]
                n = int(len(m.units(part)))
                if not n:
                    continue
                view.groups.append(Group(f"{paper} · {setting} · {m.name} · {sl}", _rows_of(first, mask, m, index), n,
                                         m.unit, (paper, setting, m.name, str(sl))))
                units = [m.units(f[mask]) for f in frames]
                for a, b in _pairs(c, names):
                    ua, ub = units[names.index(a)], units[names.index(b)].reindex(units[names.index(a)].index)
                    differ = ~np.isclose(ua.to_numpy(float), ub.to_numpy(float), equal_nan=True)
                    view.groups.append(Group(
                        f"{paper} · {setting} · {m.name} · {sl}: {a} and {b} disagree", _unit_rows(
                            m, part, ua.index[differ], index), int(differ.sum()), m.unit,
                        (paper, setting, m.name, str(sl), a, b)))
    return _close(view, failed)


def _run_rows(paper: str, run: Any) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]]]:
    """A run's scored rows by their key in the unit sets, and each slice's keys: from its run record, or, for a
    run given as a scored frame beside records, from the record its frame gives (the same rows a scoring writes)."""
    rec = getattr(run, "record", None)
    if rec is None:
        from vlamb_nb.benchmarks import get_benchmark
        from vlamb_nb.record import from_scored

        origin = Path(run.origin) if getattr(run, "origin", "") else None
        rec = from_scored(get_benchmark(paper), run.scored, store=origin if origin is not None and origin.is_file()
                          else None, n_resamples=0)
    rows: dict[str, dict[str, Any]] = {}
    for r in rec.rows:
        if r.get("scored", True):
            rows.setdefault(str(r.get("key") or r.get("item_id")), r)
    slices: dict[str, set[str]] = {}
    for sets in rec.units.values():
        for u in sets or ():
            if not u.whole:
                slices.setdefault(u.slice, set()).update(_unit_items(u.keys, u.members))
    return rows, slices


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


def _unit_entry(view: ItemsView, c: Any, entry: dict[str, Any], failed: list[str]) -> None:
    """One paper and setting compared from unit sets: a row per common item from each run's record rows (the
    prompt the store recorded, the answer, the parse, the gold, each metric's per-item value), a group per value
    (its units' items) and per pair (the items of the units where the two differ)."""
    from vlamb_nb.stats.metric import ZERO_ONE

    paper, setting, metrics, names, scores = (entry["paper"], entry["setting"], entry["metrics"], entry["models"],
                                              entry["scores"])
    runs = list(entry["runs"])
    _ensure(view, names, metrics)
    tables = [_run_rows(paper, r) for r in runs]
    keys = list(dict.fromkeys(k for m in metrics for sc in scores.get(m.name, ())[:1]  # the whole set first
                              for k in _unit_items(sc.keys, sc.members)))
    items = next((r.items for r in runs if getattr(r, "items", None) is not None), None)
    _ablation_note(view, paper, setting, runs)
    asked = _asked(view, paper, _ask(runs) or setting, items, keys, failed) if items is not None else {}
    no_image = 0
    index: dict[str, int] = {}
    for key in keys:
        first = next((rows[key] for rows, _ in tables if key in rows), None)
        if first is None:
            continue
        ident = (paper, setting, key)
        prompt, img = asked.get(key, (None, None))  # a record's image names are never read from disk: a record
        no_image += img is None  # may come from anywhere, and the page would carry the files it names
        shown = first.get("prompt") if isinstance(first.get("prompt"), str) and first.get("prompt") else prompt
        slices = next(sl for rows, sl in tables if key in rows)
        for n in slices:
            if n not in view.slices:
                view.slices.append(n)
        sl = sorted(view.slices.index(n) for n, ks in slices.items() if key in ks)
        view.rows.append({"k": key, "p": paper, "s": setting, "i": img, "q": _text(shown),
                          "g": _text(first.get("gold")), "gb": _box(first.get("gold")), "sl": sl,
                          "m": [None] * len(view.models)})
        view._index[ident] = index[key] = len(view.rows) - 1
        for name, (rows, _) in zip(names, tables, strict=True):
            row = rows.get(key)
            if row is None:
                continue
            parsed = row.get("parsed") if isinstance(row.get("parsed"), dict) else {}
            flags: dict[tuple[bool, int], float | None] = {}
            for m in metrics:
                if m.kind in ZERO_ONE and m.name in row:
                    flags[(m.kind != "binary", len(flags))] = _value(row.get(m.name))
            view.rows[-1]["m"][view.models.index(name)] = {
                "a": _text(row.get("answer")), "e": _text(row.get("failure")),
                "x": _text(_first(parsed, list(parsed), PARSED)), "pb": _box(_first(parsed, list(parsed), PRED_BOX)),
                "ok": _outcome(row, list(row), flags), "v": [_value(row.get(n)) for n in view.metrics]}
    if no_image:
        view.notes.append(f"{paper} {setting}: {no_image} item(s) show no image: a run record names its images "
                          "(their paths in the data), it does not hold them; compare the stores with their data "
                          "(--source) to see them")
    for m in metrics:
        for sc in scores.get(m.name, ()):
            rows_of = sorted({index[k] for k in _unit_items(sc.keys, sc.members) if k in index})
            view.groups.append(Group(f"{paper} · {setting} · {m.name} · {sc.slice}", rows_of, len(sc.keys), m.unit,
                                     (paper, setting, m.name, str(sc.slice))))
            for a, b in _pairs(c, names):
                va, vb = sc.values[names.index(a)], sc.values[names.index(b)]
                differ = ~np.isclose(np.asarray(va, float), np.asarray(vb, float), equal_nan=True)
                at = np.flatnonzero(differ).tolist()
                members = None if sc.members is None else [sc.members[i] for i in at]
                view.groups.append(Group(
                    f"{paper} · {setting} · {m.name} · {sc.slice}: {a} and {b} disagree",
                    sorted({index[k] for k in _unit_items([sc.keys[i] for i in at], members) if k in index}),
                    len(at), m.unit, (paper, setting, m.name, str(sc.slice), a, b)))


def _pairs(c: Any, names: list[str]) -> list[tuple[str, str]]:
    import itertools

    base = getattr(c, "baseline", None)
    if base is not None and base in names:
        return [(m, base) for m in names if m != base]
    return list(itertools.combinations(names, 2))


def _unit_rows(metric: Any, part: Any, units: Any, index: dict[str, int]) -> list[int]:
    """The rows of the given units (a metric over groups: every row of each group)."""
    if metric.kind == "all_correct":
        mask = part[metric.group].astype(str).isin({str(u) for u in units}).to_numpy()
    else:
        mask = part.index.isin(units)
    return _rows_of(part, mask, metric, index)


def comparison_links(view: ItemsView | None, c: Any) -> dict[str, list[int | None]]:
    """The group of each row of the comparison's values and pairs tables, in the tables' order."""
    if view is None:
        return {"values": [], "pairs": []}
    values = [view.group_for(r["paper"], r["setting"], r["metric"], r["slice"])
              for r in c.values.to_dict(orient="records")]
    pairs = [view.group_for(r["paper"], r["setting"], r["metric"], r["slice"], r["model_a"], r["model_b"])
             for r in (c.pairs.to_dict(orient="records") if len(c.pairs) else [])]
    return {"values": values, "pairs": pairs}
