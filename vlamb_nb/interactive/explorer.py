"""An interactive explorer for any benchmark's scored predictions (JupyterLab, ipywidgets).

The state (filters, the filtered view, the current item, what to show for it) is plain Python in
:class:`ExplorerState`, so it is tested without a browser; :class:`Explorer` only draws widgets
around it, and only when displayed. It works on DataFrame columns alone, never on a benchmark's
internals: any scored predictions frame (``bench.score(...)`` or a predictions file read back) is
enough, with whichever of the usual columns it has (``setting``, ``correct``, ``language``,
``category``, ``text``, ``prompt``, boxes, images). Saliency maps are computed on demand when a
model and a way to rebuild the item's request are given.

>>> ex = Explorer(scored, image_root=data_dir)          # doctest: +SKIP
>>> ex                                                  # doctest: +SKIP   (shows the widget)
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from vlamb_nb.errors import SettingError

# candidate column names, in order of preference, for each thing the explorer shows or filters by
FILTER_CANDIDATES: dict[str, tuple[str, ...]] = {
    "setting": ("setting",),
    "correct": ("correct", "is_correct", "hit", "right"),
    "failure": ("failure", "failure_type", "outcome"),
    "language": ("language", "lang"),
    "category": ("category", "type", "bias", "label_category", "subcategory", "dataset_name"),
    "subset": ("subset", "image_source"),  # VAGUE's VCR / Ego4D, RACQUET's general / bias, Ref-Adv's image source
    "negation": ("use_negation",),  # Ref-Adv's slices (its Table 3 and Fig. 4)
    "distractors": ("distractor_count",),
    "object": ("coco_category",),  # RACQUET's referent class
}
SHOW_CANDIDATES: dict[str, tuple[str, ...]] = {
    "id": ("item_id", "id", "request_id", "uid"),
    "prompt": ("prompt", "question", "expression", "query"),
    "raw": ("text", "response", "output", "raw"),
    "parsed": ("letter", "answer", "pred", "prediction", "parsed", "pred_label", "judge_label", "pred_xyxy", "pred_box",
               "label_text"),
    "gold": ("gold", "gold_letter", "gold_text", "gold_label", "label", "target", "gt_xyxy", "gt_box", "bbox"),
    "image": ("image", "image_path", "images", "image_file", "file_name", "img", "image_url"),
}
MISSING = "(missing)"


def _first(columns: Iterable[str], candidates: Sequence[str]) -> str | None:
    cols = list(columns)
    return next((c for c in candidates if c in cols), None)


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        import pandas as pd

        res = pd.isna(v)
        return bool(res) if isinstance(res, bool) or getattr(res, "shape", None) == () else False
    except (TypeError, ValueError):
        return False


def _key(v: Any) -> Any:
    """A hashable, comparable filter value (missing values become one bucket)."""
    if _is_missing(v):
        return MISSING
    if hasattr(v, "item") and getattr(v, "shape", None) == ():
        v = v.item()
    if isinstance(v, (list, tuple, dict, set)):
        return str(v)
    return v


def failure_type(row: Any) -> str:
    """One label per item: generation failed, unparsed, wrong, correct (or an explicit failure column)."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    for col in FILTER_CANDIDATES["failure"]:
        v = get(col, None)
        if not _is_missing(v) and v != "":
            return str(v)
    if not _is_missing(get("error", None)) and get("error", None):
        return "generation_failed"
    pe = get("parse_error", None)
    if (get("valid", True) is False) or (not _is_missing(pe) and pe):
        return f"unparsed: {pe}" if not _is_missing(pe) and pe else "unparsed"
    ok = get("correct", None)
    if _is_missing(ok):
        return "unscored"
    return "correct" if bool(ok) else "wrong"


def _with_item_columns(frame: Any, items: Any) -> Any:
    """Add the item columns a predictions frame lacks (e.g. the image), joined on item id = ``id``."""
    if "id" not in items.columns:
        raise SettingError("items need an 'id' column to be joined to the predictions")
    key = "item_id" if "item_id" in frame.columns else "id"
    if key not in frame.columns:
        raise SettingError("the predictions need an 'item_id' or 'id' column to join the items")
    extra = [c for c in items.columns if c not in frame.columns and c != "id"]
    if not extra:
        return frame
    lookup = items.assign(_key=items["id"].astype(str)).drop_duplicates("_key").set_index("_key")[extra]
    joined = lookup.reindex(frame[key].astype(str).to_numpy()).reset_index(drop=True)
    return frame.join(joined)


def _box_like(v: Any) -> bool:
    try:
        return len(v) == 4 and all(isinstance(float(x), float) for x in v)
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class Jump:
    """The outcome of a go-to-id request: whether the view moved, and what to tell the user."""

    ok: bool
    message: str


class ExplorerState:
    """Filters, the filtered view and the current position over a predictions DataFrame."""

    def __init__(self, frame: Any, *, items: Any = None, filters: Sequence[str] | None = None,
                 box_columns: Sequence[str] | None = None, image_column: str | None = None,
                 image_root: str | os.PathLike | None = None, box_format: str = "abs_xyxy") -> None:
        import pandas as pd

        if not isinstance(frame, pd.DataFrame):
            raise SettingError(f"the explorer needs a DataFrame of predictions, got {type(frame).__name__}")
        self.frame = frame.reset_index(drop=True).copy()
        if items is not None:
            self.frame = _with_item_columns(self.frame, items)
        self.frame["failure_type"] = [failure_type(r) for _, r in self.frame.iterrows()]
        self.filter_columns = self._filter_columns(filters)
        self.show_columns = {k: _first(self.frame.columns, v) for k, v in SHOW_CANDIDATES.items()}
        if image_column is not None:
            if image_column not in self.frame.columns:
                raise SettingError(f"no image column {image_column!r} in the predictions")
            self.show_columns["image"] = image_column
        self.box_columns = list(box_columns) if box_columns is not None else self._box_columns()
        self.image_root = image_root
        self.box_format = box_format
        self.filters: dict[str, set[Any]] = {}
        self.position = 0
        self._view_index = list(range(len(self.frame)))
        self._view_set = set(self._view_index)

    # -- discovery ---------------------------------------------------------------------------------
    def _filter_columns(self, chosen: Sequence[str] | None) -> dict[str, str]:
        if chosen is not None:
            missing = [c for c in chosen if c not in self.frame.columns]
            if missing:
                raise SettingError(f"no column(s) {', '.join(missing)} to filter by; have {', '.join(self.frame.columns)}")
            return {c: c for c in chosen}
        out = {}
        for name, cands in FILTER_CANDIDATES.items():
            col = "failure_type" if name == "failure" else _first(self.frame.columns, cands)
            if col is not None:
                out[name] = col
        return out

    def _box_columns(self) -> list[str]:
        out = []
        for c in self.frame.columns:
            if not any(t in c.lower() for t in ("box", "xyxy")):
                continue
            vals = [v for v in self.frame[c].head(20) if not _is_missing(v)]
            if vals and all(_box_like(v) or (isinstance(v, (list, tuple)) and v and all(_box_like(b) for b in v))
                            for v in vals):
                out.append(c)
        return out

    # -- filtering -----------------------------------------------------------------------------------
    def options(self, name: str) -> list[Any]:
        """Distinct values of a filter (by its name, e.g. ``"setting"``, or a column), with counts order."""
        col = self._col(name)
        counts = self.frame[col].map(_key).value_counts(dropna=False)
        return sorted(counts.index.tolist(), key=lambda v: (str(type(v)), str(v)))

    def shown_filters(self) -> list[str]:
        """Filters worth a selector: those with at least two values (a one-value list filters nothing)."""
        return [name for name in self.filter_columns if len(self.options(name)) > 1]

    def fixed_filters(self) -> dict[str, Any]:
        """Filters with a single value over all items, shown as a note instead of a selector."""
        return {name: opts[0] for name in self.filter_columns if len(opts := self.options(name)) == 1}

    def _col(self, name: str) -> str:
        if name in self.filter_columns:
            return self.filter_columns[name]
        if name in self.frame.columns:
            return name
        raise SettingError(f"unknown filter {name!r}; choose one of {', '.join(self.filter_columns)}")

    def set_filter(self, name: str, values: Iterable[Any] | Any | None) -> int:
        """Keep items whose ``name`` value is in ``values`` (None or empty clears); returns the view size."""
        col = self._col(name)
        if values is None:
            self.filters.pop(col, None)
        else:
            vals = {_key(v) for v in (values if isinstance(values, (list, tuple, set, frozenset)) else [values])}
            if vals:
                self.filters[col] = vals
            else:
                self.filters.pop(col, None)
        self._refilter()
        return len(self)

    def _refilter(self) -> None:
        current = self._view_index[self.position] if self._view_index else None
        mask = [True] * len(self.frame)
        for col, vals in self.filters.items():
            keys = self.frame[col].map(_key)
            mask = [m and k in vals for m, k in zip(mask, keys, strict=True)]
        self._view_index = [i for i, m in enumerate(mask) if m]
        self._view_set = set(self._view_index)
        # stay on the same item when it survives the filter, else go to the first match
        self.position = self._view_index.index(current) if current in self._view_index else 0

    @property
    def view(self):
        """The filtered rows (original row order)."""
        return self.frame.iloc[self._view_index]

    def __len__(self) -> int:
        return len(self._view_index)

    # -- navigation -----------------------------------------------------------------------------------
    def goto(self, position: int) -> int:
        if not self._view_index:
            raise SettingError("no items match the current filters")
        if not 0 <= position < len(self):
            raise SettingError(f"position {position} out of range 0..{len(self) - 1}")
        self.position = position
        return position

    def next(self, step: int = 1) -> int:
        """Move forward (wrapping around), so stepping through never dead-ends."""
        if self._view_index:
            self.position = (self.position + step) % len(self)
        return self.position

    def prev(self, step: int = 1) -> int:
        return self.next(-step)

    def jump_to_id(self, item_id: Any) -> Jump:
        """Move to the item with this id, or leave the state as it was and say why not (for the go-to box:
        a typo or a filtered-out item must not silently move the view elsewhere)."""
        col = self.show_columns.get("id")
        wanted = str(item_id).strip() if item_id is not None else ""
        if col is None:
            return Jump(False, "these predictions have no id column, so there is nothing to jump to")
        if not wanted:
            return Jump(False, "type an item id")
        ids = self.frame[col].astype(str)
        rows = [i for i in range(len(self.frame)) if ids.iat[i] == wanted]
        if not rows:
            known = ", ".join(repr(x) for x in ids.head(3))
            return Jump(False, f"no item with id {wanted!r} (ids look like {known}); nothing changed")
        in_view = [self._view_index.index(i) for i in rows if i in self._view_set]
        if not in_view:
            active = ", ".join(self._filter_name(c) for c in self.filters)
            return Jump(False, f"item {wanted!r} is hidden by the current filters ({active}); clear them to see it")
        self.position = in_view[0]
        return Jump(True, f"item {wanted!r}: {self.position + 1} / {len(self)}")

    def _filter_name(self, column: str) -> str:
        return next((n for n, c in self.filter_columns.items() if c == column), column)

    def slider(self) -> dict[str, Any]:
        """The slider over the filtered items, 1-based like the counter (disabled when the view is empty)."""
        n = len(self)
        return {"min": 1, "max": max(n, 1), "value": self.position + 1 if n else 1, "disabled": n < 2}

    def current(self):
        """The current row (a pandas Series), or None when nothing matches."""
        if not self._view_index:
            return None
        return self.frame.iloc[self._view_index[self.position]]

    # -- what to show ---------------------------------------------------------------------------------
    def details(self) -> dict[str, Any]:
        """Everything the widget shows for the current item, as plain data."""
        row = self.current()
        if row is None:
            return {"empty": True, "message": "no items match the current filters"}
        out: dict[str, Any] = {"empty": False, "position": self.position, "n": len(self)}
        for what, col in self.show_columns.items():
            out[what] = None if col is None or _is_missing(row.get(col)) else row.get(col)
        out["failure_type"] = row["failure_type"]
        out["correct"] = None if "correct" not in row or _is_missing(row.get("correct")) else bool(row["correct"])
        out["boxes"] = {c: row[c] for c in self.box_columns if not _is_missing(row.get(c))}
        from vlamb_nb.saliency.analysis import reference_size

        out["box_size"] = reference_size(row)  # the size the boxes are expressed in, when the row says
        out["filters"] = {name: _key(row[col]) for name, col in self.filter_columns.items()}
        return out

    def counts(self) -> dict[str, Any]:
        """Size of the view and its accuracy / failure mix (shown above the item)."""
        v = self.view
        out: dict[str, Any] = {"n": len(v), "of": len(self.frame)}
        if "correct" in v.columns and len(v):
            ok = v["correct"].dropna()
            out["accuracy"] = float(ok.astype(bool).mean()) if len(ok) else None
        out["failure_types"] = v["failure_type"].value_counts().to_dict()
        return out

    def image(self):
        """The current item's image (PIL), or raise ImageError naming what is missing."""
        from vlamb_nb.errors import ImageError
        from vlamb_nb.images import load_image

        d = self.details()
        src = d.get("image")
        if src is None:
            raise ImageError("this item has no image reference")
        if isinstance(src, (list, tuple)) and src and not isinstance(src, (bytes, bytearray)):
            src = src[0]
        return load_image(src, root=self.image_root)


class Explorer:
    """The ipywidgets front end over :class:`ExplorerState` (widgets are built when displayed).

    Filter selectors (only for filters with two or more values), prev/next, a slider over the filtered
    items and a go-to-id box; every control calls the state, so the widget holds no logic of its own.
    ``request_for(row) -> Request`` and ``model`` enable the "saliency" button; ``saliency_method``
    picks the method. Nothing is computed until asked.
    """

    def __init__(self, frame: Any, *, model: Any = None, request_for: Callable[[Any], Any] | None = None,
                 saliency_method: str = "gradient", **state_kwargs: Any) -> None:
        self.state = ExplorerState(frame, **state_kwargs)
        self.model = model
        self.request_for = request_for
        self.saliency_method = saliency_method
        self._explainer = None
        self._widget = None

    def saliency(self):
        """The saliency map of the current item (needs ``model`` and ``request_for``)."""
        from vlamb_nb.saliency.methods import Explainer

        if self.model is None or self.request_for is None:
            raise SettingError("saliency needs a loaded model and request_for(row) -> Request")
        if self._explainer is None:
            self._explainer = Explainer(self.model)
        row = self.state.current()
        if row is None:
            raise SettingError("no current item")
        return self._explainer.explain(self.request_for(row), self.saliency_method)

    # -- widgets ------------------------------------------------------------------------------------
    def widget(self):
        if self._widget is None:
            self._widget = self._build()
        return self._widget

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget())

    def _build(self):
        import ipywidgets as w

        st = self.state
        selectors = {}
        for name in st.shown_filters():  # a filter with one value would be a selector that does nothing
            opts = [str(o) for o in st.options(name)]
            selectors[name] = w.SelectMultiple(options=opts, description=name, rows=min(4, max(2, len(opts))))
        fixed = st.fixed_filters()
        fixed_note = w.HTML("<i>same for every item: " + html.escape(
            ", ".join(f"{k} = {v}" for k, v in fixed.items())) + "</i>" if fixed else "")
        prev_b, next_b = w.Button(description="◀ prev"), w.Button(description="next ▶")
        sal_b = w.Button(description="saliency", disabled=self.model is None or self.request_for is None)
        counter = w.HTML()
        slider = w.IntSlider(description="item", readout=True, continuous_update=False, **st.slider())
        id_box = w.Text(placeholder="item id", description="go to id", continuous_update=False)
        go_b = w.Button(description="go")
        message = w.HTML()
        # the item view is one HTML widget (figures inlined as PNG), not an Output widget: capturing
        # display() into an Output widget can leave nbclient (papermill) waiting forever in batch runs
        view = w.HTML()
        syncing = [False]  # the slider is moved by refresh() too: only a user's move should navigate

        def refresh(*_: Any) -> None:
            c = st.counts()
            acc = f", accuracy {c['accuracy']:.1%}" if c.get("accuracy") is not None else ""
            counter.value = f"<b>{st.position + 1 if len(st) else 0} / {c['n']}</b> (of {c['of']}){acc}"
            syncing[0] = True
            try:
                spec = st.slider()
                slider.disabled = spec["disabled"]
                if spec["max"] < slider.value:
                    slider.value = spec["value"]
                slider.max = spec["max"]
                slider.value = spec["value"]
            finally:
                syncing[0] = False
            view.value = self.item_html()

        def on_filter(name: str):
            def handler(change: dict[str, Any]) -> None:
                raw = set(change["new"])
                st.set_filter(name, [o for o in st.options(name) if str(o) in raw] or None)
                message.value = ""
                refresh()
            return handler

        for name, sel in selectors.items():
            sel.observe(on_filter(name), names="value")
        prev_b.on_click(lambda _: (st.prev(), refresh()))
        next_b.on_click(lambda _: (st.next(), refresh()))

        def on_slider(change: dict[str, Any]) -> None:
            if syncing[0] or not len(st):
                return
            st.goto(int(change["new"]) - 1)
            refresh()

        def on_go(*_: Any) -> None:
            jump = st.jump_to_id(id_box.value)
            colour = "inherit" if jump.ok else "#B22222"
            message.value = f"<span style='color:{colour}'>{html.escape(jump.message)}</span>"
            if jump.ok:
                refresh()

        slider.observe(on_slider, names="value")
        go_b.on_click(on_go)
        id_box.observe(on_go, names="value")  # Enter (or leaving the box) jumps too

        def on_saliency(_: Any) -> None:
            try:
                view.value = self.item_html() + _figure_html(self._saliency_figure())
            except Exception as e:  # noqa: BLE001 - shown to the user, the explorer keeps working
                view.value = self.item_html() + f"<p><i>saliency failed: {html.escape(str(e))}</i></p>"

        sal_b.on_click(on_saliency)
        refresh()
        return w.VBox([w.HBox(list(selectors.values())), w.HBox([prev_b, next_b, sal_b, counter]),
                       w.HBox([slider, id_box, go_b, message]), fixed_note, view])

    def item_html(self) -> str:
        """The current item as HTML: fields, then the image with its boxes (inlined PNG)."""
        d = self.state.details()
        if d["empty"]:
            return f"<i>{html.escape(str(d['message']))}</i>"
        fields = [("id", d.get("id")), ("filters", d["filters"]), ("outcome", d["failure_type"]),
                  ("prompt", d.get("prompt")), ("raw output", d.get("raw")), ("parsed", d.get("parsed")),
                  ("gold", d.get("gold"))]
        rows = "".join(f"<tr><th style='text-align:left;vertical-align:top'>{k}</th>"
                       f"<td style='text-align:left;white-space:pre-wrap'>{html.escape(str(v))}</td></tr>"
                       for k, v in fields)
        try:
            img = self.state.image()
        except Exception as e:  # noqa: BLE001 - shown to the user, the explorer keeps working
            return f"<table>{rows}</table><i>image unavailable: {html.escape(str(e))}</i>"
        return f"<table>{rows}</table>" + _figure_html(self._figure(img, d["boxes"], d.get("box_size")))

    def _figure(self, img: Any, boxes: dict[str, Any], box_size: Any = None):
        import matplotlib.pyplot as plt

        from vlamb_nb.boxes import rescale, to_abs_xyxy
        from vlamb_nb.plots import PALETTE, new_figure
        from vlamb_nb.saliency.analysis import _rect

        w, h = img.size
        fig, ax = new_figure(5.0, 5.0 * h / w)
        ax.imshow(img)
        for i, (name, val) in enumerate(boxes.items()):
            group = val if (isinstance(val, (list, tuple)) and val and _box_like(val[0])) else [val]
            for b in group:
                if box_size is not None and self.state.box_format.startswith("abs"):
                    b = rescale(b, box_size, (w, h))
                x0, y0, x1, y1 = to_abs_xyxy(b, w, h, self.state.box_format)
                ax.add_patch(_rect(x0, y0, x1 - x0, y1 - y0, PALETTE[i % len(PALETTE)]))
            ax.text(0, -4 - 12 * i, name, color=PALETTE[i % len(PALETTE)], fontsize=8)
        ax.axis("off")
        plt.close(fig)
        return fig

    def _saliency_figure(self):
        import matplotlib.pyplot as plt

        from vlamb_nb.saliency.analysis import _scale_boxes, plot_overlay

        smap = self.saliency()
        d = self.state.details()
        boxes = {k: v for k, v in d["boxes"].items() if _box_like(v)}
        if self.state.box_format.startswith("abs"):
            boxes = _scale_boxes(boxes, d.get("box_size"), smap.size)
        fig = plot_overlay(smap, boxes=boxes, fmt=self.state.box_format)
        plt.close(fig)
        return fig


def _figure_html(fig) -> str:
    """A matplotlib figure as an inline PNG <img> tag."""
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return f"<img src='data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}'/>"


def explorer_tabs(explorers: dict[str, Explorer]):
    """One tab per benchmark, each with its own explorer; a tab's widgets are built when it is first shown."""
    import ipywidgets as w

    if not explorers:
        raise SettingError("explorer_tabs needs at least one explorer")
    names = list(explorers)
    holders = [w.VBox() for _ in names]
    holders[0].children = (explorers[names[0]].widget(),)

    def on_tab(change: dict[str, Any]) -> None:
        i = change["new"]
        if i is not None and not holders[i].children:
            holders[i].children = (explorers[names[i]].widget(),)

    tabs = w.Tab(children=holders, titles=[f"{n} ({len(explorers[n].state.frame)})" for n in names])
    tabs.observe(on_tab, names="selected_index")
    tabs.explorers = explorers  # type: ignore[attr-defined]
    return tabs
